"""Project rules that code review would otherwise have to remember."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVICES = ("gateway", "registry", "cacher", "storage")


def test_committed_stubs_match_the_protos() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "protos" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_services_talk_only_through_protos() -> None:
    for service in SERVICES:
        others = tuple(f"services.{s}" for s in SERVICES if s != service)
        for path in (ROOT / "services" / service).rglob("*.py"):
            crossing = {m for m in _imports(path) if m.startswith(others)}
            assert not crossing, f"{path.relative_to(ROOT)} imports {crossing}"


def test_shared_library_imports_no_service() -> None:
    for path in (ROOT / "strata").rglob("*.py"):
        assert not {m for m in _imports(path) if m.startswith("services")}, path
