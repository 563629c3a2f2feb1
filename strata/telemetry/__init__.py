"""OpenTelemetry and structlog setup shared by every strata service.

One call, `setup("strata-gateway")`, gives a service its tracer provider
(service.name set, parent-based ratio sampling, OTLP export when
OTEL_EXPORTER_OTLP_ENDPOINT is set, standard OTEL_* variables honoured) and
JSON logs carrying the current trace_id/span_id on every line. Trace context
crosses gRPC between strata services through traced_channel and
server_interceptors, which cost an unsampled call nothing; the etcd channel
gets one manual span per call instead (see strata.etcd).
"""

from strata.telemetry._grpc import server_interceptors, traced_channel
from strata.telemetry._logging import configure_logging, get_logger
from strata.telemetry._propagation import (
    client_span,
    outside_traces,
    sampled,
    server_span,
    traceparent,
)
from strata.telemetry._setup import setup, shutdown, tracer

__all__ = [
    "client_span",
    "configure_logging",
    "get_logger",
    "outside_traces",
    "sampled",
    "server_interceptors",
    "server_span",
    "setup",
    "shutdown",
    "traced_channel",
    "traceparent",
    "tracer",
]
