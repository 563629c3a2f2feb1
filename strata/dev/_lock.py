"""HomeLock: one running strata per STRATA_HOME, and who it is.

Two systems on one home fight over etcd's data dir and ports.json: the second
one waits a minute for an etcd that cannot start and then moves the first one's
etcd ports. A flock on $STRATA_HOME/lock, held for as long as the system runs,
lets the second one refuse at once; the holder writes its pid and command line
into the file so the refusal can say which process to stop. The kernel drops a
flock when its holder dies, so a lock file left by a killed process never blocks.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import sys
from pathlib import Path


class HomeBusy(RuntimeError):
    """Another process runs strata in this home."""

    def __init__(self, home: Path, pid: int | None, command: str) -> None:
        if pid is None:
            holder, stop = "pid unknown", "stop it first"
        else:
            holder, stop = f"{command}, pid {pid}", f"stop it first (kill {pid})"
        super().__init__(f"strata is already running in {home} ({holder}); {stop}")
        self.home = home
        self.pid = pid
        self.command = command


def _own_command() -> str:
    """This process's command line as a person would type it ("python -m
    strata.dev up"), from /proc where there is one."""
    try:
        argv = Path("/proc/self/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        argv = [sys.executable, *sys.argv]
    if argv:
        argv[0] = os.path.basename(argv[0])
    command = shlex.join(argv)
    return command if len(command) <= 120 else command[:117] + "..."


class HomeLock:
    """An exclusive flock on home/lock; acquire raises HomeBusy naming the holder."""

    def __init__(self, home: Path) -> None:
        self.path = home / "lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Not O_TRUNC: the holder's pid in the file is what a refusal reports.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._holder(fd)
            os.close(fd)
            raise HomeBusy(self.path.parent, *holder) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": _own_command()}).encode(), 0)
        self._fd = fd

    @staticmethod
    def _holder(fd: int) -> tuple[int | None, str]:
        try:
            written = json.loads(os.pread(fd, 4096, 0) or b"{}")
            return int(written["pid"]), str(written["command"])
        except (ValueError, KeyError, TypeError):
            # The holder has locked but not yet written (or wrote something else).
            return None, ""

    def release(self) -> None:
        """Unlock; the file stays (removing it would race a process opening it)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the only descriptor drops the flock
