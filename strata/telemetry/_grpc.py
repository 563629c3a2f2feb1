"""gRPC aio interceptors that carry W3C trace context between strata services."""

from __future__ import annotations

from typing import Any

from opentelemetry.instrumentation.grpc import aio_client_interceptors, aio_server_interceptor


def client_interceptors() -> list[Any]:
    return list(aio_client_interceptors())  # type: ignore[no-untyped-call]


def server_interceptors() -> list[Any]:
    return [aio_server_interceptor()]  # type: ignore[no-untyped-call]
