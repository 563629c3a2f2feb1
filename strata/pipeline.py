"""Many unary calls on one gRPC stream each way: a client's calls written in
batches as they queue up, each answered as it finishes and matched to its
caller by id. In Python gRPC a unary call costs hundreds of microseconds a
side (measured at 16 callers: ~300 µs client and ~650 µs server per call,
against ~40 and ~90 µs pipelined), more than most calls' work; a message on an
open stream costs tens. The storage and registry APIs both have a Pipeline
method, served by a `Dispatcher` (over `serve`) and called through
`PipelineClient`.

A stream that breaks fails every call still waiting on it (a write among them
may or may not have been applied, exactly as with a unary call whose
connection broke); the next call opens a new stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
)
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import grpc
from opentelemetry import trace

from strata import protowire, telemetry

# Messages gathered into one batch, at most (one larger message goes alone).
BATCH_BYTES = 4 * 1024 * 1024
# The lanes of a PipelineClient: each has a stream of its own (see call).
ORDINARY, BULK = 0, 1
# What a call outside a sampled trace is made in: nothing, reused.
_UNTRACED = contextlib.nullcontext()


class Identified(Protocol):
    """A pipelined result: a protobuf message with a numeric id."""

    id: int


class TracedCall(Identified, Protocol):
    """A pipelined call: an id, and the caller's trace context when it is sampled."""

    traceparent: str


M = TypeVar("M")
T = TypeVar("T")
C = TypeVar("C", bound=TracedCall)
R = TypeVar("R", bound=Identified)
E = TypeVar("E", bound=Exception)
Answer = TypeVar("Answer")


async def batches(
    queue: asyncio.Queue[M | None], size_of: Callable[[M], int]
) -> AsyncIterator[list[M]]:
    """Lists of whatever is queued, waiting only for the first of each; ends at None."""
    held: M | None = None
    while (first := held or await queue.get()) is not None:
        held = None
        batch, size = [first], size_of(first)
        while not queue.empty() and size < BATCH_BYTES:
            item = queue.get_nowait()
            if item is None:
                yield batch
                return
            item_size = size_of(item)
            if size + item_size > BATCH_BYTES:
                held = item  # goes first in the next batch
                break
            batch.append(item)
            size += item_size
        yield batch


async def serve(
    calls: AsyncIterator[Iterable[M]],
    execute: Callable[[M], Awaitable[Answer]],
    size_of: Callable[[Answer], int],
) -> AsyncGenerator[list[Answer], None]:
    """The server side: every call of every batch run concurrently, and their
    answers (execute must answer every call, failures included) in batches as
    they finish. The stream's end waits for the calls still running."""
    results: asyncio.Queue[Answer | None] = asyncio.Queue()
    running: set[asyncio.Task[None]] = set()
    reading = True

    async def run(call: M) -> None:
        results.put_nowait(await execute(call))

    def finished(task: asyncio.Task[None]) -> None:
        running.discard(task)
        if not reading and not running:
            results.put_nowait(None)

    async def read() -> None:
        nonlocal reading
        try:
            async for batch in calls:
                for call in batch:
                    task = asyncio.create_task(run(call))
                    running.add(task)
                    task.add_done_callback(finished)
        finally:
            reading = False
            if not running:
                results.put_nowait(None)

    reader = asyncio.create_task(read())
    try:
        async for batch in batches(results, size_of):
            yield batch
    finally:
        reader.cancel()
        for task in list(running):
            task.cancel()


def continued(
    tracer: trace.Tracer, name: str, traceparent: str, work: Awaitable[T]
) -> Awaitable[T]:
    """A pipelined call's work, inside a SERVER span continuing the caller's
    trace when it brought one; most calls bring none and get work itself back,
    no coroutine and no context manager around it."""
    if not traceparent:
        return work
    return _in_server_span(tracer, name, traceparent, work)


async def _in_server_span(
    tracer: trace.Tracer, name: str, traceparent: str, work: Awaitable[T]
) -> T:
    with telemetry.server_span(tracer, name, traceparent):
        return await work


class Serializable(Protocol):
    def SerializeToString(self) -> bytes: ...


def serialized(answer: Serializable) -> bytes:
    """An answer that is a protobuf message, as its bytes (an Operation's default)."""
    return answer.SerializeToString()


class Operation(NamedTuple):
    """What one kind of pipelined call runs: method is its unary RPC's name, run
    the work given the call's request (the same the unary RPC runs), field the
    Result field its answer goes in, and encode the answer's bytes there."""

    method: str
    run: Callable[[Any], Awaitable[Any]]
    field: str
    encode: Callable[[Any], protowire.Encoded] = serialized


class Dispatcher(Generic[E]):
    """The server side of a Pipeline method, for a servicer whose pipelined
    calls run the operations its unary RPCs run: every Call's request goes to
    the operation of its kind (the name of the Call's `request` oneof field set),
    inside the caller's trace when it brought one, and its answer or failure
    comes back as Result wire bytes written by `results`.

    Every call is answered, or its caller would wait forever: an error of type
    `refused` (the service's own way of refusing a call) as `failure` writes it,
    any other exception, a bug, as `unexpected` writes it from the call's
    request and a description, and a Call without a request as `empty`."""

    def __init__(
        self,
        service_name: str,
        operations: Mapping[str, Operation],
        results: protowire.ResultWriter,
        *,
        refused: type[E],
        failure: Callable[[E], bytes],
        unexpected: Callable[[Any, str], bytes],
        empty: bytes,
        tracer: trace.Tracer,
        log: Any,
    ) -> None:
        # Each kind's full method name (its span's), made once, with its operation.
        self._operations = {
            kind: (f"{service_name}/{operation.method}", operation)
            for kind, operation in operations.items()
        }
        self._results = results
        self._refused = refused
        self._failure, self._unexpected, self._empty = failure, unexpected, empty
        self._tracer, self._log = tracer, log

    async def stream(self, request_iterator: AsyncIterator[Any]) -> AsyncGenerator[bytes, None]:
        """The Pipeline method's responses as wire bytes (a repeated Result
        each): request_iterator yields messages with a `calls` field. The
        servicer's Pipeline must itself be an async generator (grpc.aio runs any
        other streaming handler as a sync one, in a thread), yielding these."""
        calls = (message.calls async for message in request_iterator)
        batches = serve(calls, self.execute, protowire.size_of)
        try:
            async for batch in batches:
                yield protowire.repeated(batch)
        finally:
            await batches.aclose()

    async def execute(self, call: Any) -> protowire.Encoded:
        """One Call's Result as wire bytes (in pieces for a list)."""
        kind = call.WhichOneof("request")
        if kind is None:
            return self._results(call.id, "failure", self._empty)
        name, operation = self._operations[kind]
        request = getattr(call, kind)
        try:
            answer = await continued(self._tracer, name, call.traceparent, operation.run(request))
        except self._refused as e:
            return self._results(call.id, "failure", self._failure(e))
        except Exception as e:  # a bug must still answer, or the caller waits forever
            self._log.exception("pipelined call failed", method=operation.method)
            failure = self._unexpected(request, f"{type(e).__name__}: {e}")
            return self._results(call.id, "failure", failure)
        return self._results(call.id, operation.field, operation.encode(answer))


class _Stream(Generic[C, R]):
    def __init__(self, client: PipelineClient[C, R]) -> None:
        self.client = client
        self.pending: dict[int, asyncio.Future[R]] = {}
        self.outgoing: asyncio.Queue[C | None] = asyncio.Queue()
        self.alive = True
        with telemetry.outside_traces():  # the stream belongs to no one request
            self.call = client.method(self._requests())
        self.reader = asyncio.create_task(self._read(), name="pipeline reader")

    async def _requests(self) -> AsyncIterator[Any]:
        async for batch in batches(self.outgoing, self.client.size_of):
            yield self.client.wrap(batch)

    async def _read(self) -> None:
        error = self.client.failed(None)
        try:
            async for response in self.call:
                for result in self.client.unwrap(response):
                    future = self.pending.pop(result.id, None)
                    if future is not None and not future.done():
                        future.set_result(result)
        except grpc.aio.AioRpcError as e:
            error = self.client.failed(e)
        except asyncio.CancelledError:
            pass
        finally:
            self.alive = False
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(error)
            self.pending.clear()

    def close(self) -> None:
        self.alive = False
        self.outgoing.put_nowait(None)
        self.call.cancel()


class PipelineClient(Generic[C, R]):
    """The client side of one Pipeline method: method is the stub's
    stream-stream callable, wrap makes a request message of a batch of calls,
    unwrap lists a response message's results, failed is the error the calls
    waiting on a broken stream get (given the stream's gRPC error, or None when
    it just ended), and tracer opens the CLIENT spans of sampled calls."""

    def __init__(
        self,
        method: Callable[[AsyncIterator[Any]], Any],
        *,
        wrap: Callable[[list[C]], Any],
        unwrap: Callable[[Any], Iterable[R]],
        size_of: Callable[[C], int],
        failed: Callable[[grpc.aio.AioRpcError | None], Exception],
        tracer: trace.Tracer,
    ) -> None:
        self.method, self.wrap, self.unwrap = method, wrap, unwrap
        self.size_of, self.failed = size_of, failed
        self._tracer = tracer
        self._ids = itertools.count(1)
        # The open stream of each lane: ORDINARY's and BULK's.
        self._streams: list[_Stream[C, R] | None] = [None, None]

    async def call(self, call: C, name: str, *, lane: int = ORDINARY) -> R:
        """call's result; a sampled caller's call goes under a CLIENT span named
        name and carries its trace context. A call whose answer may be megabytes
        (a list) goes in the BULK lane, on a stream of its own: the messages of
        one stream arrive in order, so a large answer on the ordinary stream
        would hold up every small one behind it until its last byte arrived."""
        # Most calls: no span, and a do-nothing context manager rather than a
        # coroutine more.
        with self._traced(call, name) if telemetry.sampled() else _UNTRACED:
            stream, future = self._send(call, lane)
            try:
                return await future
            finally:
                stream.pending.pop(call.id, None)

    @contextlib.contextmanager
    def _traced(self, call: C, name: str) -> Iterator[None]:
        with telemetry.client_span(self._tracer, name) as parent:
            call.traceparent = parent
            yield

    def _send(self, call: C, lane: int) -> tuple[_Stream[C, R], asyncio.Future[R]]:
        """call queued on the lane's open stream (opened if need be), and the
        future of its result, which the caller forgets from the stream once it
        has it."""
        stream = self._streams[lane]
        if stream is None or not stream.alive:
            stream = self._streams[lane] = _Stream(self)
        call.id = next(self._ids)
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        stream.pending[call.id] = future
        stream.outgoing.put_nowait(call)
        return stream, future

    async def close(self) -> None:
        open_streams = [stream for stream in self._streams if stream is not None]
        self._streams = [None, None]
        for stream in open_streams:
            stream.close()
        await asyncio.gather(*(stream.reader for stream in open_streams), return_exceptions=True)
