"""Run a command that gets SIGTERM when the process that started it dies.

`python _pdeathsig.py PARENT_PID COMMAND...` sets Linux's PR_SET_PDEATHSIG and
execs COMMAND, so etcd and the services stop by themselves when
`strata.dev up` is killed outright (SIGKILL, a crash) instead of running on
as orphans. It is a separate exec rather than a subprocess preexec_fn because
preexec_fn runs Python in a forked copy of a threaded process (grpc's threads),
which the subprocess documentation warns can deadlock. It imports only the
standard library so it starts fast (System runs it with -I -S).

The death signal survives exec and is delivered when the *thread* that forked
the child ends, which is why System uses this only from the main thread.
Where prctl is missing the command simply runs: the inherited HomeLock still
keeps the home locked until it exits.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str]) -> None:
    parent, command = int(argv[0]), argv[1:]
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the home lock still covers the orphans
    if os.getppid() != parent:
        # The parent died before prctl took effect: no signal will come.
        sys.exit(f"strata: {command[0]} not started: its parent {parent} has exited")
    # Python ignores SIGPIPE and SIGXFSZ, and ignored signals survive exec;
    # give the command the defaults subprocess would have (restore_signals).
    for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
