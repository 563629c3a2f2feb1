"""A watch: the client's stream of events, held on the gateway's one
Registry/WatchStream (services/gateway/watches.py) until its timeout, the
client's leaving or the gateway's shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import random

from aiohttp import web

from services.gateway import negotiation
from services.gateway.handlers import query
from services.gateway.handlers.call import Call
from services.gateway.output import OUTPUT, partial_event
from services.gateway.responses import JSON
from services.gateway.watches import ClientWatch
from strata.api.errors import StatusError
from strata.proto.registry.v1 import registry_pb2

# kube's default --min-request-timeout: watches end after 30-60 minutes.
MIN_REQUEST_TIMEOUT_SECONDS = 1800

# The one event of a watch whose deadline has passed before it began (kube's
# watch of a context already done: its storage's error as an ERROR event).
DEADLINE_EXCEEDED = (
    b'{"type":"ERROR","object":'
    + StatusError(
        code=500, reason="InternalError", message="context deadline exceeded", bare=True
    ).to_json()
    + b"}\n"
)


def _timeout(seconds: int) -> float:
    """The watch's timeout as kube computes it: timeoutSeconds times Go's
    time.Second, in int64 nanoseconds that wrap as Go's do; when that is 0
    (none given), a random share of the minimum request timeout."""
    nanoseconds = (seconds * 10**9 + 2**63) % 2**64 - 2**63
    if nanoseconds == 0:
        return MIN_REQUEST_TIMEOUT_SECONDS * (1 + random.random())
    return nanoseconds / 1e9


async def _serve(
    watch: ClientWatch, call: Call, response: web.StreamResponse, seconds: float
) -> None:
    """The watch's events to the client until its timeout, the registry's end
    of it, the client's leaving or the gateway's shutdown."""
    request = call.request
    if seconds < 0:  # past already: kube's deadline answer, and nothing else
        await response.write(DEADLINE_EXCEEDED)
        return
    assert request.transport is not None
    watch.attach(response, request.protocol, request.transport)
    try:
        async with asyncio.timeout(seconds):
            await asyncio.shield(watch.finished)
    except TimeoutError:
        pass
    except asyncio.CancelledError:
        # close_watches ended the stream, or the client has gone: either
        # way the watch ends here, and the request with it.
        if not call.backend.closing and request.transport is not None:
            raise
        if (task := asyncio.current_task()) is not None:
            task.uncancel()


async def watch_objects(call: Call) -> web.StreamResponse:
    request = call.request
    options = query.list_options(request)
    timeout = _timeout(options.timeout_seconds)
    # The cacher sends its last bookmark shortly before this ends.
    options.timeout_seconds = int(timeout)
    watch = call.backend.watches.open(registry_pb2.WatchRequest(resource=call.ref, options=options))
    out = request.get(OUTPUT)
    if out is not None and out.transform == negotiation.PARTIAL:
        watch.transform = partial_event(out.version)
    try:
        await watch.wait_started()
        response = web.StreamResponse(status=200, headers={"Content-Type": JSON})
        response.enable_chunked_encoding()
        await response.prepare(request)
        if request.transport is None:  # the client has gone
            return response
        await _serve(watch, call, response, timeout)
    finally:
        watch.cancel()
    transport = request.transport
    if transport is None:  # the client has gone
        return response
    if watch.terminated:
        # Too slow to keep: drop the connection rather than wait on it.
        transport.close()
        return response
    await watch.drained()
    with contextlib.suppress(ConnectionError):  # the client left first
        await response.write_eof()
    return response
