"""The OpenAPI fuzz suite's report: how many requests the run sent, over how
many operations, in how long, and what it got back, printed at the end of the
run (also when everything passed)."""

from __future__ import annotations

from typing import Any

# Lines the suite leaves for the summary.
REPORT: list[str] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not REPORT:
        return
    terminalreporter.section("fuzzing every served operation (tests/fuzz)")
    for line in REPORT:
        terminalreporter.write_line(line)
