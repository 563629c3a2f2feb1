"""Log lines are JSON and carry the current trace and span ids."""

from __future__ import annotations

import json
import logging

import pytest
from opentelemetry.sdk.trace import TracerProvider

from strata.telemetry._logging import configure_logging, get_logger


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
