"""An OTLP/gRPC trace receiver for tests and benchmarks: spans reach it through
the services' real export path, the one an OpenTelemetry collector would see."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from strata.dev._system import free_port


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_span_id: str


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: OtlpReceiver) -> None:
        self._receiver = receiver

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: object
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        received = []
        for resource_spans in request.resource_spans:
            service = next(
                (
                    a.value.string_value
                    for a in resource_spans.resource.attributes
                    if a.key == "service.name"
                ),
                "",
            )
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    received.append(
                        ReceivedSpan(
                            service=service,
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                        )
                    )
        self._receiver.add(received)
        return trace_service_pb2.ExportTraceServiceResponse()


class OtlpReceiver:
    def __init__(self) -> None:
        self.port = free_port()
        self._spans: list[ReceivedSpan] = []
        self._arrived = threading.Condition()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
            _TraceService(self), self._server
        )
        self._server.add_insecure_port(f"127.0.0.1:{self.port}")

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, spans: list[ReceivedSpan]) -> None:
        with self._arrived:
            self._spans.extend(spans)
            self._arrived.notify_all()

    def spans(self, trace_id: str) -> list[ReceivedSpan]:
        with self._arrived:
            return [s for s in self._spans if s.trace_id == trace_id]

    def wait_for(
        self, trace_id: str, done: Callable[[list[ReceivedSpan]], bool], timeout: float = 15
    ) -> list[ReceivedSpan]:
        """The trace's spans once done(spans) holds, or what arrived by the timeout."""
        with self._arrived:
            self._arrived.wait_for(
                lambda: done([s for s in self._spans if s.trace_id == trace_id]), timeout
            )
            return [s for s in self._spans if s.trace_id == trace_id]

    def start(self) -> None:
        self._server.start()

    def stop(self) -> None:
        self._server.stop(grace=1)
