"""The README's Benchmarks block, each command as written, run with
STRATA_BENCH_QUICK=1 (small counts, a few seconds each: bench/_harness.py) and
its results sent to a temporary folder, never over the committed
bench/results/. Each must print its numbers and write its results file; a
benchmark script the block does not list, or a line nobody checks, fails."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.readme import shell_block

ROOT = Path(__file__).resolve().parents[2]
BLOCK = "Benchmarks: .venv/bin/python bench/api.py"

# Per command (without its comment): what it prints once it has measured, and
# the results file it writes.
PRINTS: dict[str, tuple[str, str]] = {
    ".venv/bin/python bench/api.py": (r'"create_vs_etcd_put": \d+\.\d+', "api.json"),
    ".venv/bin/python bench/api_floor.py": (
        r"floor creates [\d.]+/s, raw etcd puts [\d.]+/s: ratio \d+\.\d+",
        "api-floor.json",
    ),
    ".venv/bin/python bench/watch.py": (
        r"\d+ watchers: \d+ delivered, 0 missing, 0 duplicated; latency ms \{'p50': [\d.]+",
        "watch-uvloop-protocol-clients.json",
    ),
    ".venv/bin/python bench/watch.py --floor": (
        r"\d+ watchers: \d+ delivered, 0 missing, 0 duplicated; latency ms \{'p50': [\d.]+",
        "watch-floor-uvloop-protocol-clients.json",
    ),
    ".venv/bin/python bench/storage.py": (
        r"c=\d+ +put +strata +[\d.]+/s +etcd +[\d.]+/s +ratio \d+\.\d+",
        "storage.json",
    ),
    ".venv/bin/python bench/crds.py": (r'"custom_to_configmap_ratio": \d+\.\d+', "crds.json"),
    ".venv/bin/python bench/list.py": (
        r"list of \d+: \{'rv0': \{'median': [\d.]+.*cacher RSS per object -?\d+ B",
        "list.json",
    ),
    ".venv/bin/python bench/informer.py": (
        r"strata: \{'sync_seconds': [\d.]+, 'update_seconds': [\d.]+",
        "informer.json",
    ),
    ".venv/bin/python bench/authz.py": (r'"rbac_cost_percent": -?\d+\.\d+', "authz.json"),
}


def _commands() -> list[str]:
    return [c.split("#", 1)[0].strip() for c in shell_block(BLOCK).commands]


def _committed() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (ROOT / "bench" / "results").glob("*.json")}


def test_every_benchmark_is_in_the_block() -> None:
    scripts = {p.name for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_")}
    listed = {c.split()[1].removeprefix("bench/") for c in _commands()}
    assert listed == scripts


# Each starts a whole system of its own: about 10 s of a quiet machine's time
# (start and stop) plus a few seconds of measuring, much more on a busy one.
@pytest.mark.timeout(240)
@pytest.mark.parametrize("command", _commands())
def test_benchmark_command(command: str, tmp_path: Path) -> None:
    assert command in PRINTS, f"README benchmark with no check here: {command!r}"
    printed, written = PRINTS[command]
    committed = _committed()
    env = {**os.environ, "STRATA_BENCH_QUICK": "1", "STRATA_BENCH_RESULTS": str(tmp_path)}
    result = subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=220,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(printed, result.stdout), result.stdout
    assert f"wrote {tmp_path / written}\n" in result.stdout, result.stdout
    assert [p.name for p in tmp_path.iterdir()] == [written]
    stamped = json.loads((tmp_path / written).read_text())
    assert stamped["benchmark"] == written.removesuffix(".json")
    assert _committed() == committed
