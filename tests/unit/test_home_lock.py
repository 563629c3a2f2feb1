"""HomeLock: a second system in a home in use is refused at once, naming the
holder, and changes nothing; a lock file nobody holds does not block; children
that inherited the lock keep it after the holder is killed, and are named."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from strata.dev import HomeBusy, HomeLock, System

REPO = Path(__file__).resolve().parents[2]


def test_a_second_lock_on_the_same_home_names_the_holder(tmp_path: Path) -> None:
    first = HomeLock(tmp_path)
    first.acquire()
    try:
        # flock locks belong to an open file, so a second open in this process
        # conflicts exactly as another process's would.
        with pytest.raises(HomeBusy) as refused:
            HomeLock(tmp_path).acquire()
    finally:
        first.release()
    assert refused.value.pid == os.getpid()
    assert "python" in refused.value.command
    assert str(refused.value) == (
        f"strata is already running in {tmp_path} "
        f"({refused.value.command}, pid {os.getpid()}); stop it first (kill {os.getpid()})"
    )


def test_a_released_lock_can_be_taken_again(tmp_path: Path) -> None:
    first = HomeLock(tmp_path)
    first.acquire()
    first.release()
    second = HomeLock(tmp_path)
    second.acquire()
    assert second.held
    second.release()
    assert not second.held


def test_a_lock_file_nobody_holds_does_not_block(tmp_path: Path) -> None:
    # What a killed holder leaves behind: its pid in the file, no flock.
    (tmp_path / "lock").write_text(json.dumps({"pid": 1, "command": "gone"}))
    lock = HomeLock(tmp_path)
    lock.acquire()
    try:
        written = json.loads((tmp_path / "lock").read_text())
        assert written["pid"] == os.getpid()
    finally:
        lock.release()


def test_a_holder_that_has_not_written_yet_is_reported_without_a_pid(tmp_path: Path) -> None:
    first = HomeLock(tmp_path)
    first.acquire()
    (tmp_path / "lock").write_text("")  # the moment between flock and write
    try:
        with pytest.raises(HomeBusy) as refused:
            HomeLock(tmp_path).acquire()
    finally:
        first.release()
    assert refused.value.pid is None
    assert str(refused.value) == (
        f"strata is already running in {tmp_path} (pid unknown); stop it first"
    )


def test_system_start_in_a_home_in_use_refuses_at_once_and_changes_nothing(
    tmp_path: Path,
) -> None:
    ports = json.dumps({"etcd_client": 1, "etcd_peer": 2})
    (tmp_path / "ports.json").write_text(ports)
    holder = HomeLock(tmp_path)
    holder.acquire()
    try:
        system = System(tmp_path, gateway_port=0, etcd_binary=Path("/nonexistent/etcd"))
        began = time.monotonic()
        with pytest.raises(HomeBusy) as refused:
            system.start()
        assert time.monotonic() - began < 1
    finally:
        holder.release()
    assert refused.value.pid == os.getpid()
    assert (tmp_path / "ports.json").read_text() == ports
    # No logs/, no etcd/: nothing was started.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lock", "ports.json"]


def _hold_with_children(home: Path, *names: str) -> subprocess.Popen[str]:
    """A process that takes the lock, starts a `sleep` per name that inherits
    it (as System's children do), records them, prints their pids and waits,
    in its own process group."""
    hold = (
        "import subprocess, sys, time; from pathlib import Path; from strata.dev import HomeLock\n"
        "lock = HomeLock(Path(sys.argv[1])); lock.acquire(); pids = []\n"
        "for name in sys.argv[2:]:\n"
        "    child = subprocess.Popen(['sleep', '60'], pass_fds=(lock.fd,))\n"
        "    lock.add_child(name, child.pid); pids.append(child.pid)\n"
        "print(*pids, flush=True); time.sleep(60)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", hold, str(home), *names],
        cwd=REPO, stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"  # orphans may wait a while for a reaper


def test_children_that_inherited_the_lock_keep_it_after_the_holder_is_killed(
    tmp_path: Path,
) -> None:
    holder = _hold_with_children(tmp_path, "etcd", "storage")
    try:
        assert holder.stdout is not None
        etcd, storage = map(int, holder.stdout.readline().split())
        holder.kill()
        holder.wait()
        with pytest.raises(HomeBusy) as refused:
            HomeLock(tmp_path).acquire()
        assert refused.value.holder_exited
        assert refused.value.leftovers == [("etcd", etcd), ("storage", storage)]
        assert str(refused.value) == (
            f"strata's processes from pid {holder.pid} (which has exited) still run in "
            f"{tmp_path}: etcd pid {etcd}, storage pid {storage}; "
            f"stop them first (kill {etcd} {storage})"
        )
        # Doing what it says frees the home.
        os.kill(etcd, signal.SIGKILL)
        os.kill(storage, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while not (_gone(etcd) and _gone(storage)) and time.monotonic() < deadline:
            time.sleep(0.05)
        lock = HomeLock(tmp_path)
        lock.acquire()
        lock.release()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


def _exited_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _write_record(home: Path, record: dict[str, object]) -> None:
    with open(home / "lock", "r+") as f:
        f.truncate()
        f.write(json.dumps(record))


def test_a_refusal_names_only_the_children_that_still_run(tmp_path: Path) -> None:
    first = HomeLock(tmp_path)
    first.acquire()
    gone = _exited_pid()
    me = os.getpid()
    try:
        # The record of a holder that has exited; of its children, one runs
        # (this process stands in for it) and one has exited.
        _write_record(
            tmp_path,
            {
                "pid": gone,
                "command": "python -m strata.dev up",
                "children": [{"name": "etcd", "pid": gone}, {"name": "storage", "pid": me}],
            },
        )
        with pytest.raises(HomeBusy) as refused:
            HomeLock(tmp_path).acquire()
        assert str(refused.value) == (
            f"strata's processes from pid {gone} (which has exited) still run in "
            f"{tmp_path}: storage pid {me}; stop them first (kill {me})"
        )
        # None recorded runs, yet something holds the lock: say what is known.
        _write_record(tmp_path, {"pid": gone, "command": "x", "children": []})
        with pytest.raises(HomeBusy) as refused:
            HomeLock(tmp_path).acquire()
        assert str(refused.value) == (
            f"strata's processes from pid {gone} (which has exited) still hold "
            f"{tmp_path / 'lock'}; stop them first"
        )
    finally:
        first.release()


def test_a_reused_pid_is_not_taken_for_the_holder(tmp_path: Path) -> None:
    first = HomeLock(tmp_path)
    first.acquire()
    try:
        record = json.loads((tmp_path / "lock").read_text())
        assert record["pid"] == os.getpid() and isinstance(record["started"], int)
        # The same pid with another start time is another process.
        _write_record(tmp_path, {**record, "started": record["started"] - 1, "children": []})
        with pytest.raises(HomeBusy) as refused:
            HomeLock(tmp_path).acquire()
        assert refused.value.holder_exited
    finally:
        first.release()


def test_the_record_follows_the_children_and_stays_json(tmp_path: Path) -> None:
    lock = HomeLock(tmp_path)
    lock.acquire()
    try:
        lock.add_child("etcd", 11)
        lock.add_child("storage", 12)
        lock.remove_child(11)
        record = json.loads((tmp_path / "lock").read_text())  # padded, never cut
        assert [(c["name"], c["pid"]) for c in record["children"]] == [("storage", 12)]
        assert record["pid"] == os.getpid()
    finally:
        lock.release()
