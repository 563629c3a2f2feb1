"""Trace context crosses a real gRPC call (unary and server-streaming) only
when the caller's span is sampled: a sampled call gets a CLIENT span whose
traceparent travels in metadata and a SERVER span continuing it; an unsampled
call carries nothing and records nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from strata import telemetry

SERVICE = "strata.test.v1.Echo"
EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def provider() -> None:
    """The process's tracer provider, exporting to memory: roots are never
    sampled (other tests in this process record nothing), children follow."""
    sdk = TracerProvider(sampler=ParentBased(ALWAYS_OFF))
    sdk.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(sdk)


@pytest.fixture(autouse=True)
def no_spans_yet() -> Iterator[None]:
    EXPORTER.clear()
    yield


seen: list[tuple[str, bool]] = []  # (traceparent metadata, server span recording)


def _note(context: grpc.aio.ServicerContext[Any, Any]) -> None:
    metadata = dict(context.invocation_metadata() or ())
    seen.append((str(metadata.get("traceparent", "")), trace.get_current_span().is_recording()))


async def _unary(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
    _note(context)
    return request


async def _stream(
    request: bytes, context: grpc.aio.ServicerContext[Any, Any]
) -> AsyncIterator[bytes]:
    _note(context)
    for _ in range(3):
        yield request


@pytest.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    server = grpc.aio.server(interceptors=telemetry.server_interceptors())
    handlers: dict[str, grpc.RpcMethodHandler[bytes, bytes]] = {
        "Unary": grpc.unary_unary_rpc_method_handler(_unary),
        "Stream": grpc.unary_stream_rpc_method_handler(_stream),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = telemetry.traced_channel(grpc.aio.insecure_channel(f"127.0.0.1:{port}"))
    seen.clear()
    try:
        yield channel
    finally:
        await channel.close()
        await server.stop(None)


def _sampled_parent() -> Any:
    parent = SpanContext(
        trace_id=0x0AF7651916CD43DD8448EB211C80319C,
        span_id=0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return trace.set_span_in_context(NonRecordingSpan(parent))


async def _calls(channel: grpc.aio.Channel) -> None:
    unary: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(f"/{SERVICE}/Unary")
    stream: grpc.aio.UnaryStreamMultiCallable[bytes, bytes] = channel.unary_stream(
        f"/{SERVICE}/Stream"
    )
    assert await unary(b"hi") == b"hi"
    assert [m async for m in stream(b"ho")] == [b"ho"] * 3


def _finished(kind: SpanKind) -> list[ReadableSpan]:
    return [s for s in EXPORTER.get_finished_spans() if s.kind == kind]


async def test_a_sampled_call_carries_its_client_span_to_a_server_span(
    channel: grpc.aio.Channel,
) -> None:
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("request", context=_sampled_parent()) as request:
        assert request.is_recording()
        await _calls(channel)
    # Each sampled CLIENT span closes once its call's status is read.
    for _ in range(50):
        if len(_finished(SpanKind.CLIENT)) == 2:
            break
        await asyncio.sleep(0.02)
    clients = {s.name: s for s in _finished(SpanKind.CLIENT)}
    servers = {s.name: s for s in _finished(SpanKind.SERVER)}
    assert set(clients) == set(servers) == {f"{SERVICE}/Unary", f"{SERVICE}/Stream"}
    trace_id = request.get_span_context().trace_id
    for name, client in clients.items():
        server = servers[name]
        assert (
            client.parent is not None
            and client.parent.span_id == request.get_span_context().span_id
        )
        assert server.parent is not None and server.parent.span_id == client.context.span_id
        assert client.context.trace_id == server.context.trace_id == trace_id
        assert client.attributes is not None and client.attributes["rpc.grpc.status_code"] == 0
    assert all(parent.startswith("00-0af7651916cd43dd8448eb211c80319c-") for parent, _ in seen)
    assert [recording for _, recording in seen] == [True, True]


async def test_an_unsampled_call_carries_and_records_nothing(channel: grpc.aio.Channel) -> None:
    await _calls(channel)
    assert seen == [("", False), ("", False)]
    assert EXPORTER.get_finished_spans() == ()


async def test_a_failed_sampled_call_marks_its_client_span(channel: grpc.aio.Channel) -> None:
    missing: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
        f"/{SERVICE}/Missing"
    )
    tracer = trace.get_tracer("test")
    with (
        tracer.start_as_current_span("request", context=_sampled_parent()),
        pytest.raises(grpc.aio.AioRpcError) as failed,
    ):
        await missing(b"x")
    assert failed.value.code() == grpc.StatusCode.UNIMPLEMENTED
    for _ in range(50):
        if _finished(SpanKind.CLIENT):
            break
        await asyncio.sleep(0.02)
    (client,) = _finished(SpanKind.CLIENT)
    assert client.status.status_code == trace.StatusCode.ERROR
    assert client.attributes is not None
    assert client.attributes["rpc.grpc.status_code"] == grpc.StatusCode.UNIMPLEMENTED.value[0]
