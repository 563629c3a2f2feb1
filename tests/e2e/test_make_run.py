"""`make run` as a person runs it: it says what it is doing while it starts,
refuses at once (naming the process) a STRATA_HOME whose system is running,
leaving that system's ports.json alone, and stops everything on SIGTERM. If
its process is killed outright, its children follow it; children that outlive
their parent keep the home locked, and a refusal names them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from strata.dev import ETCD_MINIMUM, TOOLS, HomeLock, etcd_version, find_etcd, free_port

REPO = Path(__file__).resolve().parents[2]
SERVICES = ["etcd", "storage", "cacher", "registry", "gateway"]


def _stat(stat: Path) -> tuple[str, int]:
    """A /proc stat file's state and process group (the fields after the ")"
    that closes the command name: state ppid pgrp ...)."""
    state, _ppid, pgrp = stat.read_text().rsplit(")", 1)[1].split()[:3]
    return state, int(pgrp)


def _group(pgid: int) -> list[str]:
    """The command lines of the live processes in process group pgid. A process
    whose main thread has exited shows as a zombie while its other threads (a
    service's gRPC threads) still run and still hold its files, the home lock
    among them: it is live until every thread is a zombie."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, pgrp = _stat(stat)
            if pgrp != pgid:
                continue
            threads = (_stat(task)[0] for task in stat.parent.glob("task/*/stat"))
            if state != "Z" or any(s != "Z" for s in threads):
                members.append((stat.parent / "cmdline").read_text().replace("\0", " "))
        except (OSError, ValueError):
            continue  # exited while we looked
    return members


@dataclass
class MakeRun:
    process: subprocess.Popen[bytes]
    home: Path
    port: int
    out: Path
    err: Path

    def stdout(self) -> str:
        return self.out.read_text()

    def stderr(self) -> str:
        return self.err.read_text()


@contextmanager
def make_run(tmp_path: Path) -> Iterator[MakeRun]:
    """`make run` in its own process group on a fresh home and a free port;
    whatever of the group is left at the end is killed."""
    home, port = tmp_path / "home", free_port()
    out, err = tmp_path / "make.out", tmp_path / "make.err"
    env = {**os.environ, "STRATA_HOME": str(home), "STRATA_PORT": str(port)}
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        process = subprocess.Popen(
            ["make", "run"], cwd=REPO, env=env, stdout=stdout, stderr=stderr,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    run = MakeRun(process, home, port, out, err)
    try:
        yield run
    finally:
        if _group(process.pid):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _wait_up(run: MakeRun, within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    while "strata is up" not in run.stdout():
        assert run.process.poll() is None, f"make run exited:\n{run.stdout()}\n{run.stderr()}"
        assert time.monotonic() < deadline, f"not up in {within}s:\n{run.stderr()}"
        time.sleep(0.2)


def _make_run_once(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`make run` to its end, in its own process group, all of which is killed
    if it has not ended in 30 s (a refusal starts nothing and takes well under that)."""
    with subprocess.Popen(
        ["make", "run"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, text=True, start_new_session=True,
    ) as process:  # fmt: skip
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_make_run_refuses_a_home_in_use_at_once_and_stops_on_sigterm(tmp_path: Path) -> None:
    with make_run(tmp_path) as first:
        _wait_up(first)
        home = first.home
        # Each slow step was announced on stderr as it began, in order (a cold
        # run says "fetching etcd-server ..." before these).
        steps = first.stderr().splitlines()
        assert all(line.startswith("strata: ") for line in steps), steps
        assert [s for s in steps if s.startswith("strata: starting")] == [
            f"strata: starting {name}" for name in SERVICES
        ]
        # stdout as scripts read it, unchanged by the step lines.
        assert first.stdout().splitlines()[1:] == [
            f"strata is up: https://127.0.0.1:{first.port}",
            f"  export KUBECONFIG={home}/kubeconfig",
            f"  endpoints: {home}/endpoints.json; logs: {home}/logs/",
        ]
        holder = json.loads((home / "lock").read_text())
        pid = holder["pid"]
        assert "strata.dev up" in Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
        ports = (home / "ports.json").read_bytes()

        env = {**os.environ, "STRATA_HOME": str(home), "STRATA_PORT": str(first.port)}
        second = _make_run_once(env)
        assert second.returncode != 0
        # At once: refused before it started anything (no "starting ..." step).
        assert "strata: starting" not in second.stderr
        assert (
            f"strata is already running in {home} "
            f"(python -m strata.dev up, pid {pid}); stop it first (kill {pid})\n"
        ) in second.stderr
        assert "strata is up" not in second.stdout
        assert (home / "ports.json").read_bytes() == ports
        assert first.process.poll() is None  # the first one runs on

        # What the refusal says to do stops everything, cleanly.
        os.kill(pid, signal.SIGTERM)
        assert first.process.wait(timeout=60) == 0, first.stderr()
        assert first.stdout().splitlines()[-1] == "strata stopped"
        deadline = time.monotonic() + 5
        while (left := _group(first.process.pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left == []


def test_a_home_locked_by_a_killed_process_is_free(tmp_path: Path) -> None:
    hold = (
        "import sys, time; from pathlib import Path; from strata.dev import HomeLock; "
        "HomeLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)"
    )
    argv = [sys.executable, "-c", hold, str(tmp_path)]
    with subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, text=True) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            assert json.loads((tmp_path / "lock").read_text())["pid"] == holder.pid
        finally:
            holder.kill()
    lock = HomeLock(tmp_path)
    lock.acquire()  # the kernel dropped the killed holder's flock
    assert json.loads((tmp_path / "lock").read_text())["pid"] == os.getpid()
    lock.release()


def _wait_gone(pgid: int, within: float) -> list[str]:
    """Wait until process group pgid has no live member; what is left."""
    deadline = time.monotonic() + within
    while (left := _group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_killing_make_runs_process_takes_its_children_with_it(tmp_path: Path) -> None:
    with make_run(tmp_path) as first:
        _wait_up(first)
        record = json.loads((first.home / "lock").read_text())
        assert [child["name"] for child in record["children"]] == SERVICES
        ports = (first.home / "ports.json").read_bytes()
        os.kill(record["pid"], signal.SIGKILL)
        # PR_SET_PDEATHSIG: each child got SIGTERM and exits by itself (make
        # exits too, its recipe having failed).
        left = _wait_gone(first.process.pid, within=10)
        assert left == [], left
    # Nothing is left to fight over the home: a new make run comes up on it,
    # and on the same etcd ports.
    with make_run(tmp_path) as second:
        _wait_up(second)
        assert (second.home / "ports.json").read_bytes() == ports
        os.kill(json.loads((second.home / "lock").read_text())["pid"], signal.SIGTERM)
        assert second.process.wait(timeout=60) == 0, second.stderr()


def _child_pid(home: Path, name: str) -> int:
    record = json.loads((home / "lock").read_text())
    return int(next(child["pid"] for child in record["children"] if child["name"] == name))


def test_a_process_that_dies_is_started_again(tmp_path: Path) -> None:
    """make run supervises its processes: a service or etcd killed outright is
    started again on its own, and says so; the system answers again and stops
    on SIGTERM as before."""
    with make_run(tmp_path) as run:
        _wait_up(run)
        for name in ("registry", "etcd"):
            pid = _child_pid(run.home, name)
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 90
            while f"strata: {name} is up again" not in run.stderr():
                assert run.process.poll() is None, run.stderr()
                assert time.monotonic() < deadline, run.stderr()
                time.sleep(0.2)
            assert f"strata: {name} exited with -9; starting it again" in run.stderr()
            assert _child_pid(run.home, name) != pid
        env = {**os.environ, "KUBECONFIG": str(run.home / "kubeconfig")}
        listed = subprocess.run(
            ["kubectl", "get", "namespaces", "-o", "name"],
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert "namespace/default" in listed.stdout, listed.stderr
        os.kill(json.loads((run.home / "lock").read_text())["pid"], signal.SIGTERM)
        assert run.process.wait(timeout=60) == 0, run.stderr()


# A system started from a worker thread (as tests start theirs, with
# asyncio.to_thread) whose children do not die with their parent: the death
# signal would follow the thread, so System does not ask for one there.
HOLD = """
import sys, threading, time
from pathlib import Path
from strata.dev import System
system = System(Path(sys.argv[1]), gateway_port=0)
worker = threading.Thread(target=system.start)
worker.start()
worker.join()
print(*(system.process(name).pid for name in sys.argv[2:]), flush=True)
time.sleep(600)
"""


def test_children_left_by_a_killed_holder_keep_the_home_and_are_named(tmp_path: Path) -> None:
    home, out = tmp_path / "home", tmp_path / "hold.out"
    with open(out, "wb") as stdout:
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(home), *SERVICES], cwd=REPO, stdout=stdout,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not out.read_text().endswith("\n"):
            assert holder.poll() is None, "the system did not start"
            assert time.monotonic() < deadline, "the system did not start in 120s"
            time.sleep(0.2)
        pids = [int(pid) for pid in out.read_text().split()]
        ports = (home / "ports.json").read_bytes()
        holder.kill()
        holder.wait()
        time.sleep(1)  # the leftovers run on (no death signal): the lock is theirs

        env = {**os.environ, "STRATA_HOME": str(home), "STRATA_PORT": str(free_port())}
        second = _make_run_once(env)
        assert second.returncode != 0
        assert "strata: starting" not in second.stderr
        named = ", ".join(f"{name} pid {pid}" for name, pid in zip(SERVICES, pids, strict=True))
        kill = " ".join(map(str, pids))
        assert (
            f"strata's processes from pid {holder.pid} (which has exited) still run in "
            f"{home}: {named}; stop them first (kill {kill})\n"
        ) in second.stderr
        assert "strata is up" not in second.stdout
        assert (home / "ports.json").read_bytes() == ports
        assert len(_group(holder.pid)) == len(SERVICES)

        # Doing what the refusal says frees the home.
        for pid in pids:
            os.kill(pid, signal.SIGTERM)
        assert _wait_gone(holder.pid, within=20) == []
        lock = HomeLock(home)
        lock.acquire()
        lock.release()
    finally:
        if _group(holder.pid):
            os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()


def test_a_cold_make_run_says_it_is_installing_before_it_does(tmp_path: Path) -> None:
    # The real $(STAMP) recipe for a venv that does not exist, with a PYTHON
    # that fails at once: its first line is said, and nothing is installed.
    venv = tmp_path / ".venv"
    result = subprocess.run(
        ["make", f"VENV={venv}", "PYTHON=false", "run"],
        cwd=REPO, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode != 0
    assert result.stdout.splitlines()[0] == (
        f"strata: creating {venv} and installing packages (a minute or so, once)"
    )
    assert not venv.exists()


def test_fetching_etcd_from_a_downloaded_deb_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    find_etcd()  # makes sure the project's own fetch has happened
    debs = sorted((TOOLS / "apt").glob("etcd-server_*.deb"))
    if not debs:
        pytest.skip("no etcd-server .deb in .tools/apt: etcd came from STRATA_ETCD_BINARY or PATH")
    tools = tmp_path / "tools"
    (tools / "apt").mkdir(parents=True)
    (tools / "apt" / debs[-1].name).symlink_to(debs[-1])
    # A PATH with what dpkg -x needs and no etcd, so find_etcd has to fetch.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dpkg", "dpkg-deb", "tar"):
        found = shutil.which(tool)
        assert found is not None, f"{tool} is not installed"
        (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("STRATA_ETCD_BINARY", raising=False)

    said: list[str] = []
    etcd = find_etcd(tools, progress=said.append)

    assert etcd == tools / "etcd" / "usr" / "bin" / "etcd"
    assert (etcd_version(etcd) or (0, 0, 0)) >= ETCD_MINIMUM
    assert said == [f"unpacking {debs[-1].name} into {tools}/etcd/"]
