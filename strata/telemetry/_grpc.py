"""gRPC aio interceptors that carry W3C trace context between strata services.

Calls multiplexed on the storage Pipeline stream carry their own context (see
_propagation); the stream itself is left out, since one span for a stream that
lives as long as the process would describe nothing.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.instrumentation.grpc import (
    aio_client_interceptors,
    aio_server_interceptor,
    filters,
)

_NOT_PIPELINE = filters.negate(filters.method_name("Pipeline"))


def client_interceptors() -> list[Any]:
    return list(aio_client_interceptors(filter_=_NOT_PIPELINE))  # type: ignore[no-untyped-call]


def server_interceptors() -> list[Any]:
    return [aio_server_interceptor(filter_=_NOT_PIPELINE)]  # type: ignore[no-untyped-call]
