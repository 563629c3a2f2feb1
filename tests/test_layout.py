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


# Folders of the repository whose Python files are not its own code.
_NOT_OURS = {
    ".venv",
    "build",
    "dist",
    "strata.egg-info",
    ".git",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(dotted: str) -> bool:
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _modules_imported(path: Path) -> list[tuple[int, str]]:
    """Every module path imports, with its line: `from a.b import c` imports a.b,
    and a.b.c as well when c is a module rather than a name."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            for alias in node.names:
                if _is_module(f"{node.module}.{alias.name}"):
                    found.append((node.lineno, f"{node.module}.{alias.name}"))
    return found


def _private_package(module: str) -> str | None:
    """The package whose private module (`_x`, not `__x__`) module is or lies in."""
    parts = module.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def reaching_into_privates(path: Path, importer: str) -> list[str]:
    """`line imports module` for each of path's imports of a private module of
    ours from outside the package holding it; importer is path's module name."""
    found = []
    for line, module in _modules_imported(path):
        package = _private_package(module)
        if package is None or not _is_module(package):  # none, or another project's
            continue
        if importer == package or importer.startswith(f"{package}."):
            continue
        found.append(f"{line} imports {module}")
    return found


def _our_python_files() -> list[Path]:
    """The repository's Python files, without descending into a virtualenv."""
    tops = [p for p in ROOT.iterdir() if p.is_dir() and p.name not in _NOT_OURS]
    nested = (path for top in tops for path in top.rglob("*.py"))
    return sorted([*ROOT.glob("*.py"), *nested])


def test_private_modules_are_imported_only_inside_their_package() -> None:
    """A package's public surface is what its __init__ and public modules export:
    services, tests, benchmarks and examples use that (strata.storage's kit for
    storage implementations, strata.client, services.storage.encryption, ...),
    so a package can rearrange its private modules without breaking anyone."""
    found = [
        f"{path.relative_to(ROOT)}:{where}"
        for path in _our_python_files()
        for where in reaching_into_privates(path, _module_name(path))
    ]
    assert found == []


def test_reaching_into_a_private_module_is_found(tmp_path: Path) -> None:
    """The check above finds what it looks for (a check that finds nothing is no proof)."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from strata.storage._wire import abort\n"
        "from strata.storage import _errors\n"
        "import strata.client._rest\n"
        "from strata.storage import GrpcStorage, continuation\n"
        "from services.storage.encryption._config import Rule\n"
        "import grpc._utilities\n"
    )
    assert reaching_into_privates(probe, "services.cacher.probe") == [
        "1 imports strata.storage._wire",
        "2 imports strata.storage._errors",
        "3 imports strata.client._rest",
        "5 imports services.storage.encryption._config",
    ]
    # Inside the package that holds them, private modules are the package's own.
    assert reaching_into_privates(probe, "strata.storage.conformance.probe") == [
        "3 imports strata.client._rest",
        "5 imports services.storage.encryption._config",
    ]
