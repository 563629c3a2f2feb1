"""What the end-to-end benchmarks share: the whole system started as `make run`
starts it (tracing on at the default sampling rate, exported over OTLP to a
receiver in this process), a lone etcd for the benchmarks that bring their own
server, an HTTPS session to its gateway, a process's CPU time, results written
to bench/results/, and a percentile that reads the same in every report.

STRATA_BENCH_QUICK=1 is the test suite's smoke run of each README benchmark
command as written: every benchmark's defaults shrink (quick_defaults) so it
runs in seconds, and its results go to $STRATA_BENCH_RESULTS or a fresh
temporary folder, never over the committed bench/results/."""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from strata.dev import OtlpReceiver, System, etcd_command, find_etcd, free_port

RESULTS = Path(__file__).resolve().parent / "results"


def quick() -> bool:
    """Whether this is a smoke run (STRATA_BENCH_QUICK=1), not a measurement."""
    return os.environ.get("STRATA_BENCH_QUICK", "") not in ("", "0")


def quick_defaults(parser: argparse.ArgumentParser, **defaults: object) -> None:
    """In a smoke run the parser's defaults become defaults (flags given still win)."""
    if quick():
        parser.set_defaults(**defaults)


def results_dir() -> Path:
    """Where results go: $STRATA_BENCH_RESULTS, else a temporary folder for a
    smoke run (its numbers mean nothing), else bench/results/."""
    if chosen := os.environ.get("STRATA_BENCH_RESULTS"):
        return Path(chosen)
    if quick():
        return Path(tempfile.mkdtemp(prefix="strata-bench-quick-"))
    return RESULTS


@contextmanager
def running_system(env: dict[str, str] | None = None) -> Iterator[System]:
    """etcd and the four services on loopback (env added to their environment),
    stopped (by PID) on the way out."""
    otlp = OtlpReceiver()
    otlp.start()
    try:
        with tempfile.TemporaryDirectory(prefix="strata-bench-") as home:
            system = System(
                Path(home),
                gateway_port=0,
                env={
                    "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint,
                    "OTEL_EXPORTER_OTLP_INSECURE": "true",
                    **(env or {}),
                },
            )
            system.start()
            try:
                yield system
            finally:
                system.stop()
    finally:
        otlp.stop()


def start_etcd(home: Path, output: IO[bytes] | int) -> tuple[subprocess.Popen[bytes], str]:
    """An etcd process on loopback with its data in home (and room for a long
    benchmark's writes), and its client address; output takes its logs."""
    client, peer = free_port(), free_port()
    address = f"127.0.0.1:{client}"
    process = subprocess.Popen(
        etcd_command(
            find_etcd(),
            data_dir=home / "etcd",
            client_url=f"http://{address}",
            peer_port=peer,
            extra=("--quota-backend-bytes=8589934592",),
        ),
        stdout=output,
        stderr=output,
    )
    return process, address


def gateway_session(
    url: str, ca_file: Path, token: str, *, connections: int = 0
) -> aiohttp.ClientSession:
    """An HTTPS session to the gateway as its admin (connections=0: no limit)."""
    context = ssl.create_default_context(cafile=str(ca_file))
    return aiohttp.ClientSession(
        base_url=url,
        headers={"Authorization": f"Bearer {token}"},
        connector=aiohttp.TCPConnector(ssl=context, limit=connections),
        timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
    )


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile p (0-100) of values."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def write_result(name: str, result: dict[str, Any]) -> Path:
    """result with when and where it was measured, as <results_dir()>/<name>.json
    (bench/results/ unless a smoke run)."""
    stamped = {
        "benchmark": name,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        **result,
    }
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(stamped, indent=2) + "\n")
    return path
