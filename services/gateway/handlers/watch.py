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
from strata.api import errors
from strata.proto.registry.v1 import registry_pb2

# kube's default --min-request-timeout: watches end after 30-60 minutes.
MIN_REQUEST_TIMEOUT_SECONDS = 1800


def _timeout(request: web.Request) -> float:
    """?timeoutSeconds=, else kube's random share of the minimum request timeout."""
    timeout_param = request.query.get("timeoutSeconds")
    if timeout_param is None:
        return MIN_REQUEST_TIMEOUT_SECONDS * (1 + random.random())
    try:
        return float(int(timeout_param))
    except ValueError:
        raise errors.bad_request(f"invalid timeoutSeconds: {timeout_param!r}") from None


async def watch_objects(call: Call) -> web.StreamResponse:
    request = call.request
    timeout = _timeout(request)
    options = query.list_options(request)
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
        watch.attach(response, request.protocol, request.transport)
        try:
            async with asyncio.timeout(timeout):
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
