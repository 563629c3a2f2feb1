"""The size rules a reader relies on: no file over 500 lines outside the
generated stubs and the tests, no function over 80 lines outside bench/."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80


def _tracked_python() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / p for p in listed if "_pb2" not in p and (ROOT / p).exists()]


def _generated(path: Path) -> bool:
    return path.name.endswith(("_pb2.py", "_pb2_grpc.py", "_pb2.pyi"))


def long_files(paths: list[Path], root: Path = ROOT) -> list[str]:
    """The files over the line limit, with their lengths."""
    found = []
    for path in paths:
        relative = path.relative_to(root).as_posix()
        if relative.startswith("tests/") or _generated(path):
            continue
        lines = path.read_text().count("\n")
        if lines > MAX_FILE_LINES:
            found.append(f"{relative}: {lines} lines")
    return found


def long_functions(paths: list[Path], root: Path = ROOT) -> list[str]:
    """The functions over the line limit, with where they are and their lengths."""
    found = []
    for path in paths:
        relative = path.relative_to(root).as_posix()
        if relative.startswith("bench/") or _generated(path):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{relative}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_file_is_over_the_limit() -> None:
    assert long_files(_tracked_python()) == []


def test_no_function_is_over_the_limit() -> None:
    assert long_functions(_tracked_python()) == []


def test_the_checks_find_what_they_forbid(tmp_path: Path) -> None:
    (tmp_path / "services").mkdir()
    long = tmp_path / "services" / "probe.py"
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    long.write_text("def f() -> None:\n" + body + "\n" * MAX_FILE_LINES)
    lines = MAX_FUNCTION_LINES + 1 + MAX_FILE_LINES
    assert long_files([long], tmp_path) == [f"services/probe.py: {lines} lines"]
    assert long_functions([long], tmp_path) == [
        f"services/probe.py:1 f: {MAX_FUNCTION_LINES + 1} lines"
    ]
    short = tmp_path / "services" / "short.py"
    short.write_text("def f() -> None:\n" + body[: -len(body.splitlines()[-1]) - 1])
    assert long_files([short], tmp_path) == long_functions([short], tmp_path) == []
