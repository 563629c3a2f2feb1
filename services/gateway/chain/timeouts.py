"""kube's request deadline: how long a request that is not a watch may take
before it is answered 504 (`?timeout=` shortens it), its body's arrival
included (bodies.py)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from services.gateway.chain import bodies
from services.gateway.chain.metrics import labels_of
from strata.api import errors
from strata.service import parse_duration

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# kube's --request-timeout default: how long a request that is not a watch may take.
REQUEST_TIMEOUT_SECONDS = 60.0


def timeouts(default_seconds: float = REQUEST_TIMEOUT_SECONDS) -> Middleware:
    """kube's request deadline: a request that is not a watch answers 504 once it
    has taken its time (?timeout=, a Go duration, or the default, whichever is
    shorter; 0 or less: no limit). What it had set going may still finish.
    A request whose body is still arriving then gets kube's timeout filter's
    answer instead (its handler is stuck reading), and its connection closed."""

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        seconds = default_seconds
        # As kube: an unreadable timeout leaves the default.
        with contextlib.suppress(ValueError):
            if asked := parse_duration(request.query.get("timeout", "")):
                seconds = min(seconds, asked) if seconds > 0 else asked
        if seconds <= 0 or labels_of(request).long_running:
            return await handler(request)
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                return await handler(request)
        except TimeoutError:
            if not deadline.expired():
                raise
            if bodies.arriving(request):
                return bodies.timed_out()
            raise errors.StatusError(
                code=504,
                reason="Timeout",
                message="Timeout: request did not complete within requested timeout - "
                "context deadline exceeded",
            ) from None

    return middleware
