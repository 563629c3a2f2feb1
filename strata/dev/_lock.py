"""HomeLock: one running strata per STRATA_HOME, and who it is.

Two systems on one home fight over etcd's data dir and ports.json: the second
one waits a minute for an etcd that cannot start and then moves the first one's
etcd ports. A flock on $STRATA_HOME/lock, held for as long as the system runs,
lets the second one refuse at once; the holder writes its pid and command line
into the file so the refusal can say which process to stop.

The kernel drops a flock when the last descriptor of the open file closes, so
a lock file left by a killed process never blocks. That is also why System
hands the descriptor to every child it starts (`fd`): if `strata.dev up` is
killed outright, its etcd and services keep the home locked for as long as any
of them runs, and because each child is recorded here (`add_child`) as it
starts, the refusal can name the leftovers instead of a process that is gone.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import sys
from pathlib import Path


def _start_time(pid: int) -> int | None:
    """When pid started (clock ticks since boot, from /proc), or None where
    there is no /proc; a live pid with another start time is a reused pid."""
    try:
        # Fields after the ")" closing the command name start at field 3 (state);
        # starttime is field 22.
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[19])


def _alive(pid: int, started: int | None) -> bool:
    """Whether the process recorded as (pid, started) still runs."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        # No /proc here: a signal 0 says whether the pid exists.
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    # A zombie holds no descriptors; a different start time is another process.
    return state[0] != "Z" and (started is None or int(state[19]) == started)


class HomeBusy(RuntimeError):
    """Another process runs strata in this home.

    pid and command name the process that took the lock; when it has exited
    (holder_exited) and its children keep the home locked, leftovers names
    them as (name, pid), oldest first."""

    def __init__(
        self,
        home: Path,
        pid: int | None,
        command: str,
        *,
        holder_exited: bool = False,
        leftovers: list[tuple[str, int]] | None = None,
    ) -> None:
        self.home = home
        self.pid = pid
        self.command = command
        self.holder_exited = holder_exited
        self.leftovers = leftovers or []
        super().__init__(self._message())

    def _message(self) -> str:
        if self.pid is None:
            return f"strata is already running in {self.home} (pid unknown); stop it first"
        if not self.holder_exited:
            return (
                f"strata is already running in {self.home} ({self.command}, pid {self.pid}); "
                f"stop it first (kill {self.pid})"
            )
        gone = f"strata's processes from pid {self.pid} (which has exited)"
        if not self.leftovers:
            # Something it started holds the lock but was not recorded (or has
            # just exited): say what is known.
            return f"{gone} still hold {self.home / 'lock'}; stop them first"
        named = ", ".join(f"{name} pid {pid}" for name, pid in self.leftovers)
        pids = " ".join(str(pid) for _, pid in self.leftovers)
        return f"{gone} still run in {self.home}: {named}; stop them first (kill {pids})"


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
        self._record: dict[str, object] = {}
        self._children: list[dict[str, object]] = []
        self._written = 0

    @property
    def held(self) -> bool:
        return self._fd is not None

    @property
    def fd(self) -> int | None:
        """The locked descriptor, for a child to inherit (subprocess pass_fds):
        the flock then lasts until the child has exited too."""
        return self._fd

    def acquire(self) -> None:
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Not O_TRUNC: the holder's pid in the file is what a refusal reports.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            busy = self._busy(fd)
            os.close(fd)
            raise busy from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        pid = os.getpid()
        self._record = {"pid": pid, "started": _start_time(pid), "command": _own_command()}
        self._children, self._written, self._fd = [], 0, fd
        self._write()

    def add_child(self, name: str, pid: int) -> None:
        """Record a child that holds the lock too, so a refusal after this
        process has gone can name it."""
        self._children.append({"name": name, "pid": pid, "started": _start_time(pid)})
        self._write()

    def remove_child(self, pid: int) -> None:
        self._children = [c for c in self._children if c["pid"] != pid]
        self._write()

    def _write(self) -> None:
        if self._fd is None:
            return
        data = json.dumps({**self._record, "children": self._children}).encode()
        # Rewritten in place, padded with spaces (still JSON) to the longest
        # record so far rather than truncated first, so a refusal reading it
        # meanwhile never sees an empty or half file.
        os.pwrite(self._fd, data.ljust(self._written), 0)
        self._written = max(self._written, len(data))

    def _busy(self, fd: int) -> HomeBusy:
        home = self.path.parent
        try:
            written = json.loads(os.pread(fd, 65536, 0) or b"{}")
            pid, command = int(written["pid"]), str(written["command"])
        except (ValueError, KeyError, TypeError):
            # The holder has locked but not yet written (or wrote something else).
            return HomeBusy(home, None, "")
        if _alive(pid, written.get("started")):
            return HomeBusy(home, pid, command)
        leftovers = [
            (str(child["name"]), int(child["pid"]))
            for child in written.get("children", [])
            if _alive(int(child["pid"]), child.get("started"))
        ]
        return HomeBusy(home, pid, command, holder_exited=True, leftovers=leftovers)

    def release(self) -> None:
        """Unlock; the file stays (removing it would race a process opening it)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # the flock lasts while a child that inherited it runs
