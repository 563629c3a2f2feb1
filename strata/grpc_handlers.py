"""A gRPC method handler rebuilt around new behaviour: what a server
interceptor does to run code around a call (tracing in strata.telemetry, the
caller check in strata.tls). gRPC's handler has four shapes, one attribute set
each; the rebuilt handler keeps its shape and its (de)serializers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

Behavior = Callable[..., Any]

_SHAPES = (
    ("unary_unary", grpc.unary_unary_rpc_method_handler),
    ("unary_stream", grpc.unary_stream_rpc_method_handler),
    ("stream_unary", grpc.stream_unary_rpc_method_handler),
    ("stream_stream", grpc.stream_stream_rpc_method_handler),
)


def rewrapped(handler: Any, wrap: Callable[[Behavior], Behavior]) -> Any:
    """handler with its behaviour replaced by wrap(behaviour)."""
    for attribute, build in _SHAPES:
        behavior = getattr(handler, attribute)
        if behavior is not None:
            return build(
                wrap(behavior),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler
