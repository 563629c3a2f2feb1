"""Log lines are JSON and carry the current trace and span ids."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog
from opentelemetry.sdk.trace import TracerProvider

from strata.telemetry import configure_logging, get_logger


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """The logging configuration as it was before the test: configure_logging holds
    the test's captured stderr, which is closed once the test ends (a later log
    line from any test would fail on it)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        structlog.reset_defaults()
        structlog.contextvars.clear_contextvars()
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.mark.usefixtures("restored_logging")
def test_log_lines_carry_trace_ids(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("strata-test")
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("work") as span:
        get_logger("unit").warning("inside", answer=42)
        logging.getLogger("some.library").warning("from the standard library")
        context = span.get_span_context()
    get_logger("unit").warning("outside")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    inside, library, outside = lines[-3:]
    assert inside["event"] == "inside" and inside["answer"] == 42
    assert inside["service"] == "strata-test" and inside["level"] == "warning"
    for line in (inside, library):
        assert line["trace_id"] == format(context.trace_id, "032x")
        assert line["span_id"] == format(context.span_id, "016x")
    assert library["logger"] == "some.library"
    assert outside["trace_id"] == "" and outside["span_id"] == ""
