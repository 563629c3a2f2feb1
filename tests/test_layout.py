"""Project rules that code review would otherwise have to remember."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_committed_stubs_match_the_protos() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "protos" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# The layering rules are import-linter contracts in pyproject.toml ([tool.importlinter]);
# `make test` runs them too. COLUMNS keeps each contract's verdict on one line.
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACTS: list[dict[str, Any]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
    "importlinter"
]["contracts"]


def lint_imports(where: Path) -> tuple[int, str]:
    """lint-imports run in where with the repository's contracts; --no-cache, so that
    nothing is written into the tree it checks."""
    result = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(ROOT / "pyproject.toml")],
        cwd=where,
        env={**os.environ, "COLUMNS": "1000", "PYTHONPATH": str(where)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.returncode, result.stdout + result.stderr


def verdicts(output: str) -> dict[str, str]:
    """Each contract's name and KEPT or BROKEN, as lint-imports reports them."""
    return dict(re.findall(r"^(.+) (KEPT|BROKEN)$", output, flags=re.MULTILINE))


def test_the_layering_contracts_hold() -> None:
    code, output = lint_imports(ROOT)
    assert code == 0, output
    assert verdicts(output) == {c["name"]: "KEPT" for c in CONTRACTS}, output
    assert not (ROOT / ".import_linter_cache").exists()


def _skeleton(root: Path, files: dict[str, str]) -> None:
    """An empty package for every module the contracts name, then files (module: source)."""
    names = {"strata", "services", "tests", "bench", "examples"}
    for contract in CONTRACTS:
        for key in ("modules", "source_modules", "forbidden_modules"):
            names.update(contract.get(key, ()))
    for name in names | set(files):
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            package = root.joinpath(*parts[:i])
            package.mkdir(exist_ok=True)
            (package / "__init__.py").touch()
    for name, source in files.items():
        (root.joinpath(*name.split(".")) / "__init__.py").write_text(source)


def _probe(contract: dict[str, Any]) -> dict[str, str]:
    """One import that breaks contract, made from its own configuration."""
    if contract["type"] == "independence":
        first, second = contract["modules"][:2]
        return {first: f"import {second}\n"}
    assert contract["type"] == "forbidden", f"no probe for {contract['type']} contracts"
    return {contract["source_modules"][-1]: f"import {contract['forbidden_modules'][-1]}\n"}


# The ways of reaching into a private module, each on its own, and what stays allowed.
PRIVATE_PROBES = [
    {"strata.storage._wire": "", "services.cacher.probe": "from strata.storage._wire import x\n"},
    {"strata.storage._errors": "", "services.cacher.probe": "from strata.storage import _errors\n"},
    {"strata.client._rest": "", "examples.probe": "import strata.client._rest\n"},
    {
        "services.storage.encryption._config": "",
        "tests.probe": "from services.storage.encryption._config import Rule\n",
    },
]


def _cases() -> list[Any]:
    cases = []
    for contract in CONTRACTS:
        private = contract["type"] == "private_modules"
        for i, files in enumerate(PRIVATE_PROBES if private else [_probe(contract)]):
            cases.append(pytest.param(contract["name"], files, id=f"{contract['id']}-{i}"))
    return cases


@pytest.mark.parametrize(("broken", "files"), _cases())
def test_each_contract_finds_what_it_forbids(
    tmp_path: Path, broken: str, files: dict[str, str]
) -> None:
    """A check that finds nothing is no proof: in a skeleton of the modules the contracts
    name, one forbidden import breaks its contract and no other."""
    _skeleton(tmp_path, files)
    code, output = lint_imports(tmp_path)
    assert code == 1, output
    expected = {c["name"]: "BROKEN" if c["name"] == broken else "KEPT" for c in CONTRACTS}
    assert verdicts(output) == expected, output


def test_a_private_module_is_its_package_s_own(tmp_path: Path) -> None:
    """Inside the package that holds them, at any depth, private modules may be imported."""
    _skeleton(
        tmp_path,
        {
            "strata.storage._wire": "",
            "strata.storage.conformance.probe": "from strata.storage import _wire\n",
            "services.storage.encryption._config": "",
            "services.storage.encryption.probe": "from . import _config\n",
        },
    )
    code, output = lint_imports(tmp_path)
    assert code == 0, output
    assert verdicts(output) == {c["name"]: "KEPT" for c in CONTRACTS}, output


# What docs/architecture.md names that looks like a path of the repository: anything under
# one of its top folders, in backticks or not (the drawings are code blocks), and any
# file name in backticks.
_TOPS = ("bench", "deploy", "docs", "examples", "protos", "services", "strata", "tests")
_DOC_PATH = re.compile(
    rf"(?<![\w./-])((?:{'|'.join(_TOPS)})/[\w./-]*)|`([\w-]+\.(?:py|proto|toml|md|yml|yaml))`"
)


def doc_paths(text: str) -> list[str]:
    return [(a or b).rstrip(".") for a, b in _DOC_PATH.findall(text)]


def test_the_architecture_doc_names_only_paths_that_exist() -> None:
    """docs/architecture.md draws the tree; a file moved or renamed must move the doc too."""
    paths = doc_paths((ROOT / "docs" / "architecture.md").read_text())
    assert len(paths) > 20, paths
    assert [p for p in paths if not (ROOT / p).exists()] == []


def test_doc_paths_are_found() -> None:
    text = (
        "see `services/gateway/` and `strata/api/errors.py`, `make test`, `pyproject.toml`\n"
        "  registry   services/registry/    ... protos/strata/registry/v1/registry.proto\n"
        "as tests/unit/test_api.py. Not strata.storage, a/strata/x or `python -m services.x`."
    )
    assert doc_paths(text) == [
        "services/gateway/",
        "strata/api/errors.py",
        "pyproject.toml",
        "services/registry/",
        "protos/strata/registry/v1/registry.proto",
        "tests/unit/test_api.py",
    ]
