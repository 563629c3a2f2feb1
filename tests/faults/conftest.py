"""The fault suite's report: how long each killed process took to come back,
printed at the end of the run (also when everything passed)."""

from __future__ import annotations

from typing import Any

# (process, seconds until the supervisor had it serving, seconds until a write
# was acknowledged again), in the order the suite killed them.
RECOVERIES: list[tuple[str, float, float]] = []
# name -> number, of the whole run: writes acknowledged, events seen, relists.
TOTALS: dict[str, int] = {}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not RECOVERIES:
        return
    write = terminalreporter.write_line
    terminalreporter.section("fault injection: kill -9 under write load, with a watch")
    for name, back, writes in RECOVERIES:
        write(f"{name:9} back in {back:5.2f} s, writes acknowledged again after {writes:5.2f} s")
    write(", ".join(f"{key} {value}" for key, value in TOTALS.items()))
