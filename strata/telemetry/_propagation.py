"""Trace context carried by hand, for calls that travel inside a shared stream
(strata.storage.v1.Storage/Pipeline) where the per-call propagation of
strata.telemetry's traced channels cannot see them. Only sampled context is sent: an unsampled
call costs nothing here."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_PROPAGATOR = TraceContextTextMapPropagator()


def sampled() -> bool:
    """Whether the current span is sampled (its work is being traced)."""
    context = trace.get_current_span().get_span_context()
    return context.is_valid and context.trace_flags.sampled


def traceparent() -> str:
    """The current span's W3C traceparent if it is sampled, else ""."""
    if not sampled():
        return ""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get("traceparent", "")


@contextmanager
def client_span(tracer: trace.Tracer, name: str) -> Iterator[str]:
    """A CLIENT span for one call when the caller is sampled; yields its traceparent."""
    if not sampled():
        yield ""
        return
    with tracer.start_as_current_span(name, kind=trace.SpanKind.CLIENT):
        yield traceparent()


@contextmanager
def server_span(tracer: trace.Tracer, name: str, parent: str) -> Iterator[None]:
    """A SERVER span continuing parent (a traceparent); nothing when there is none."""
    if not parent:
        yield
        return
    context = _PROPAGATOR.extract({"traceparent": parent})
    with tracer.start_as_current_span(name, context=context, kind=trace.SpanKind.SERVER):
        yield


@contextmanager
def outside_traces() -> Iterator[None]:
    """No current trace: for opening a stream many requests share, which belongs
    to no single request's trace (a traced channel would put it in one)."""
    token = otel_context.attach(otel_context.Context())
    try:
        yield
    finally:
        otel_context.detach(token)
