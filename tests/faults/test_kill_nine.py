"""kill -9 each of etcd and the four services under write load with a watch
open, as `make run` runs them: the supervisor brings each back within 10 s on
its own; at the end every acknowledged write is readable, and the watch saw
each object exactly once and in order (after a 410 a relist counts as seeing
what it lists). Recovery times are printed at the end of the run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from strata.dev import free_port
from tests.faults.conftest import RECOVERIES, TOTALS
from tests.support.faults import Api, Watcher, Writers

REPO = Path(__file__).resolve().parents[2]
VICTIMS = ("storage", "cacher", "registry", "gateway", "etcd")
BACK_WITHIN_SECONDS = 10.0
STEADY_SECONDS = 2.0


@dataclass
class Supervised:
    """`python -m strata.dev up` (what `make run` runs) and what it printed."""

    process: subprocess.Popen[str]
    home: Path
    said: list[str]

    @property
    def api(self) -> tuple[str, str, str]:
        endpoints = json.loads((self.home / "endpoints.json").read_text())
        token = (self.home / "admin-token").read_text().strip()
        return endpoints["gateway"], token, str(self.home / "pki" / "ca.crt")

    def pid(self, name: str) -> int | None:
        """The pid the home's lock file records for name's running child."""
        try:
            record = json.loads((self.home / "lock").read_text())
        except ValueError:  # being rewritten
            return None
        return next((int(c["pid"]) for c in record["children"] if c["name"] == name), None)


def _read(stream: Iterator[str], into: list[str], up: threading.Event) -> None:
    for line in stream:
        into.append(line)
        if line.startswith("strata is up"):
            up.set()
    up.set()


@pytest.fixture(scope="module")
def supervised(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervised]:
    home = tmp_path_factory.mktemp("faults")
    env = {**os.environ, "STRATA_PORT": str(free_port())}
    process = subprocess.Popen(
        [sys.executable, "-m", "strata.dev", "up", "--home", str(home)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    said: list[str] = []
    up = threading.Event()
    assert process.stdout is not None
    reader = threading.Thread(target=_read, args=(process.stdout, said, up), daemon=True)
    reader.start()
    try:
        assert up.wait(180) and process.poll() is None, "".join(said)
        yield Supervised(process, home, said)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        # Whatever of its group is left (a child it could not stop) goes too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        reader.join(10)
        process.stdout.close()


def _kill_and_time(system: Supervised, writers: Writers, name: str) -> tuple[float, float]:
    """kill -9 name; (seconds until the supervisor said it is up again,
    seconds until a write was acknowledged again)."""
    pid = None
    for _ in range(50):  # None only while the lock file is rewritten
        if (pid := system.pid(name)) is not None:
            break
        time.sleep(0.02)
    assert pid is not None, name
    told = len(system.said)
    killed = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    back = writes = None
    while back is None or writes is None:
        now = time.monotonic() - killed
        assert now < 60, (name, "".join(system.said[told:]))
        if back is None and any(f"{name} is up again" in line for line in system.said[told:]):
            back = now
        if writes is None and writers.acknowledged_since(killed):
            writes = now
        time.sleep(0.05)
    return back, writes


def _all_readable(system: Supervised, namespace: str, names: dict[str, int]) -> None:
    api = Api(*system.api)
    status, answer = api.request("GET", f"/api/v1/namespaces/{namespace}/configmaps")
    api.close()
    assert status == 200, answer
    stored = {item["metadata"]["name"] for item in answer["items"]}
    assert not set(names) - stored, sorted(set(names) - stored)[:10]


@pytest.mark.timeout(600)
def test_every_process_comes_back_and_nothing_is_lost(supervised: Supervised) -> None:
    namespace = "faults"
    api = Api(*supervised.api)
    assert api.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})[0] == 201
    api.close()
    watcher, writers = Watcher(supervised.api, namespace), Writers(supervised.api, namespace)
    watcher.start()
    writers.start()
    try:
        for name in VICTIMS:
            time.sleep(STEADY_SECONDS)
            back, writes = _kill_and_time(supervised, writers, name)
            RECOVERIES.append((name, back, writes))
        time.sleep(STEADY_SECONDS)
        writers.stop()
        acknowledged = dict(writers.acknowledged)
        deadline = time.monotonic() + 30
        while set(acknowledged) - set(watcher.seen) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        writers.stop()
        watcher.stop()
    TOTALS.update(
        acknowledged=len(acknowledged), refused=writers.failures, seen=len(watcher.seen),
        relists=watcher.relists, resumes=watcher.resumes,
    )  # fmt: skip
    _all_readable(supervised, namespace, acknowledged)
    assert not set(acknowledged) - set(watcher.seen), sorted(set(acknowledged) - set(watcher.seen))
    assert not watcher.duplicates and not watcher.out_of_order, (
        watcher.duplicates[:10], watcher.out_of_order[:10],
    )  # fmt: skip
    slow = [(name, back) for name, back, _ in RECOVERIES if back > BACK_WITHIN_SECONDS]
    assert not slow, RECOVERIES
