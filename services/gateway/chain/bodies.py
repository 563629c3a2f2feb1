"""What kube-apiserver does with a request body that is too large or does not
arrive, so that no body holds a connection (and a file of the gateway's)
longer than its request's deadline:

- past 3 MiB, kube's handlers answer 413 naming the limit;
- a body still arriving at the request's deadline (one that stopped, or one
  that trickles) is answered by kube's timeout filter, in that filter's own
  words, as Go's server sniffs them (text/plain), and the connection closed;
- any answer given before its request's body has all arrived, and a 413
  that leaves 256 KiB or more of its body unread, says Connection: close and
  the connection is closed after it (Go's server does so when that much of
  the body is left unread): what the client still sends is drained for half
  a second, not read to its end.

The handlers read bodies as they will (aiohttp's request.read(), bounded by
the application's client_max_size); the deadline (timeouts.py) is what ends
a read that does not finish."""

from __future__ import annotations

import orjson
from aiohttp import hdrs, web

from strata.api import errors
from strata.api.errors import StatusError

# kube's limit on a request's body (its server config's MaxRequestBodyBytes).
MAX_BODY_BYTES = 3 * 1024 * 1024
# How long a connection answered before its body ended is drained before it
# is closed: Go's rstAvoidanceDelay, so that the answer is not lost to a reset.
DRAIN_SECONDS = 0.5
# The most of a body left unread that Go's server reads after the handler and
# keeps the connection (maxPostHandlerReadBytes); past it, the connection closes.
_UNREAD_KEPT_BYTES = 256 * 1024

# kube's timeout filter writes its Status with encoding/json (no kind, no
# apiVersion) and no Content-Type, which Go's server sniffs as plain text.
_TIMED_OUT = (
    orjson.dumps(
        {
            "metadata": {},
            "status": "Failure",
            "message": "Timeout: request did not complete within the allotted timeout",
            "reason": "Timeout",
            "details": {},
            "code": 504,
        }
    )
    + b"\n"
)


def too_large() -> StatusError:
    """kube's 413 for a body past MAX_BODY_BYTES."""
    return errors.too_large(f"Request entity too large: limit is {MAX_BODY_BYTES}")


def arriving(request: web.BaseRequest) -> bool:
    """Whether part of request's body has yet to arrive."""
    return not request.content.is_eof()


def timed_out() -> web.Response:
    """kube's timeout filter's 504, for a request whose body was still
    arriving at its deadline (the handler stuck reading it)."""
    return web.Response(
        status=504,
        body=_TIMED_OUT,
        headers={hdrs.CONTENT_TYPE: "text/plain; charset=utf-8"},
    )


def refused(request: web.BaseRequest, answer: web.Response) -> web.Response:
    """answer (kube's 413) closing the connection unless kube's server would
    have kept it: when the body, read to one byte past the limit, leaves less
    than 256 KiB unread by its Content-Length (Go reads that much of it and
    goes on; an unsized body is taken to leave more)."""
    length = request.content_length
    if length is None or length - (MAX_BODY_BYTES + 1) >= _UNREAD_KEPT_BYTES:
        answer.force_close()
    return answer


async def close_unfinished(request: web.Request, response: web.StreamResponse) -> None:
    """A response hook: an answer given before its request's body has all
    arrived closes the connection, and says so."""
    if arriving(request):
        response.force_close()
        response.headers[hdrs.CONNECTION] = "close"
