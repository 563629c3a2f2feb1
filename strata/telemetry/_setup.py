"""Tracer provider construction from OTEL_* environment variables."""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased, Sampler, TraceIdRatioBased

from strata.telemetry._logging import configure_logging

# Tracing every request cut throughput by more than half here; sample a tenth
# of the traces that start at strata, and follow the caller's decision always.
DEFAULT_SAMPLE_RATIO = 0.1

_provider: TracerProvider | None = None


def _sampler() -> Sampler | None:
    # The SDK builds the sampler itself when OTEL_TRACES_SAMPLER is set.
    if os.environ.get("OTEL_TRACES_SAMPLER"):
        return None
    return ParentBased(TraceIdRatioBased(DEFAULT_SAMPLE_RATIO))


def setup(service_name: str) -> TracerProvider:
    """Install the tracer provider and logging for this process (once)."""
    global _provider
    configure_logging(service_name)
    if _provider is not None:
        return _provider
    attributes = {"service.name": os.environ.get("OTEL_SERVICE_NAME") or service_name}
    provider = TracerProvider(resource=Resource.create(attributes), sampler=_sampler())
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    ):
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _provider = provider
    return provider


def shutdown() -> None:
    """Flush and stop exporting; call once on the way out."""
    if _provider is not None:
        _provider.shutdown()


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)
