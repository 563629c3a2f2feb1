"""What `make run` does when one of its processes dies: start it again, as an
init system would, with backoff, and say so; only Ctrl-C or SIGTERM stops the
system. A child that keeps dying waits longer each time (1 s, doubling up to
30 s); one that ran for a minute before it died starts again at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from strata.dev._system import StartError, System

FIRST_DELAY_SECONDS = 1.0
MOST_DELAY_SECONDS = 30.0
# A child up this long before it died has its backoff forgotten.
STABLE_SECONDS = 60.0


@dataclass
class _Backoff:
    delay: float = 0.0
    # When the child may be started again (monotonic seconds).
    not_before: float = 0.0
    # When it was last started.
    started: float = 0.0


class Supervisor:
    def __init__(self, system: System, say: Callable[[str], None]) -> None:
        self._system = system
        self._say = say
        self._backoff: dict[str, _Backoff] = {}
        # Children that died and wait to be started again.
        self._down: list[str] = []

    def tick(self) -> None:
        """Note each child that has exited, and start again those whose wait is over."""
        while (name := self._system.failed()) is not None:
            code = self._system.process(name).returncode
            self._system.stop_one(name)
            self._say(f"{name} exited with {code}; starting it again")
            backoff = self._backoff.setdefault(name, _Backoff())
            if time.monotonic() - backoff.started >= STABLE_SECONDS:
                backoff.delay = 0.0
            backoff.not_before = time.monotonic() + backoff.delay
            self._down.append(name)
        for name in list(self._down):
            if time.monotonic() >= self._backoff[name].not_before:
                self._start(name)

    def _start(self, name: str) -> None:
        backoff = self._backoff[name]
        backoff.started = time.monotonic()
        try:
            self._system.start_one(name)
        except StartError as e:
            self._say(str(e))
            self._stop_if_there(name)
            backoff.delay = min(max(backoff.delay * 2, FIRST_DELAY_SECONDS), MOST_DELAY_SECONDS)
            backoff.not_before = time.monotonic() + backoff.delay
            self._say(f"{name}: trying again in {backoff.delay:g}s")
            return
        self._down.remove(name)
        self._say(f"{name} is up again")

    def _stop_if_there(self, name: str) -> None:
        """Stop what start_one left of name (a child that is not healthy)."""
        try:
            self._system.process(name)
        except StopIteration:
            return
        self._system.stop_one(name)
