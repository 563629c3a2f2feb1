"""HomeLock: a second system in a home in use is refused at once, naming the
holder, and changes nothing; a lock file nobody holds does not block."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from strata.dev import HomeBusy, HomeLock, System


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
