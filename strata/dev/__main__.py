"""python -m strata.dev up: the whole system on loopback until Ctrl-C or SIGTERM;
a process that dies is started again (strata/dev/_supervisor.py).

Each slow step is announced on stderr ("strata: starting etcd") as it begins;
stdout carries only the "strata is up" lines, which scripts and tests read.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from strata.dev._lock import HomeBusy
from strata.dev._supervisor import Supervisor
from strata.dev._system import StartError, System


def _say(step: str) -> None:
    print(f"strata: {step}", file=sys.stderr, flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m strata.dev", description=__doc__)
    parser.add_argument("command", choices=["up"])
    parser.add_argument(
        "--home",
        default=os.environ.get("STRATA_HOME", ".strata"),
        help="state, logs and kubeconfig (env STRATA_HOME)",
    )
    args = parser.parse_args()
    system = System(Path(args.home), progress=_say)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        endpoints = system.start()
    except HomeBusy as e:
        print(e, file=sys.stderr)
        return 1
    except StartError as e:
        print(f"strata: {e}", file=sys.stderr)
        return 1
    print(f"strata is up: {endpoints.gateway}")
    print(f"  export KUBECONFIG={system.kubeconfig}")
    print(f"  endpoints: {system.home / 'endpoints.json'}; logs: {system.home / 'logs'}/")
    sys.stdout.flush()
    try:
        supervisor = Supervisor(system, _say)
        while not stop.wait(0.5):
            supervisor.tick()
    finally:
        system.stop()
        print("strata stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
