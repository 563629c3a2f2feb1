"""The commands README.md names in its prose rather than in a shell block:
`python -m services.<name> --help`, `strata storage reencrypt ...` and
`make protos`, each run (or its recipe read) and its answer checked."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["gateway", "registry", "cacher", "storage"])
def test_running_a_service_by_hand(name: str) -> None:
    """README: `python -m services.<name> --help`; every flag also reads an
    environment variable."""
    result = subprocess.run(
        [sys.executable, "-m", f"services.{name}", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.startswith(f"usage: python -m services.{name} "), result.stdout
    text = " ".join(result.stdout.split())  # argparse wraps lines anywhere
    flags = set(re.findall(r"\[(--[a-z-]+)", text))
    assert flags and len(flags) == text.count("(env STRATA_"), result.stdout
    named = {
        "storage": "STRATA_ETCD",
        "cacher": "STRATA_STORAGE",
        "registry": "STRATA_REGISTRY_STORAGE",
    }
    assert named.get(name, "STRATA_") in result.stdout


def test_strata_storage_reencrypt_is_installed() -> None:
    """README: `strata storage reencrypt --etcd https://127.0.0.1:PORT --etcd-cafile ...
    --encryption-provider-config FILE` (tests/e2e/test_etcd_tls.py runs it as README
    writes it against a system's etcd, tests/e2e/test_encryption_at_rest.py too)."""
    strata = Path(sys.executable).parent / "strata"
    result = subprocess.run(
        [str(strata), "storage", "reencrypt", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.startswith("usage: strata storage reencrypt "), result.stdout
    flags = ("--etcd ETCD", "--etcd-cafile", "--etcd-certfile", "--etcd-keyfile")
    assert all(flag in result.stdout for flag in flags), result.stdout
    assert "--encryption-provider-config" in result.stdout


def test_make_protos_regenerates_the_stubs() -> None:
    """README: `make protos` regenerates the committed stubs; it runs the same
    generator tests/test_layout.py runs with --check (no drift)."""
    result = subprocess.run(
        ["make", "-n", "protos"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip().endswith("bin/python protos/generate.py"), result.stdout
