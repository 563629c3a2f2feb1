"""The chain's outermost answer: every refusal a step or handler raises, as a
StatusError or as aiohttp's own HTTP errors, and every bug, becomes the
Status kube would answer (kube's panic recovery and error responders)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from services.gateway import output, paths
from services.gateway.chain import bodies
from services.gateway.responses import status_response
from strata import telemetry
from strata.api import errors
from strata.api.errors import StatusError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

log = telemetry.get_logger("strata.gateway")


def _status(request: web.Request, error: StatusError) -> web.Response:
    return status_response(error, pretty=output.wants_pretty(request))


def _unretried(request: web.Request, error: StatusError) -> StatusError:
    """error, without the Retry-After of a dependency away when request is a
    write: client-go repeats any request so answered, and a write that met a
    broken hop may have been stored all the same (kube asks a write to come
    back only when it certainly did not run: 429)."""
    if error.code != 503 or error.retry_after_seconds is None or request.method in _READS:
        return error
    return errors.service_unavailable(error.message)


_READS = frozenset({"GET", "HEAD"})


@web.middleware
async def render_status(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except StatusError as e:
        return _status(request, _unretried(request, e))
    except web.HTTPRequestEntityTooLarge:
        return bodies.refused(request, _status(request, bodies.too_large()))
    except web.HTTPNotFound:
        # No route: kube's REST container answers a Status for its own paths
        # (/api..., /version/...), Go's mux plain text for the rest.
        if paths.json_prefixed(request.path, ()):
            return _status(request, errors.path_not_found())
        return output.text_not_found()
    except web.HTTPMethodNotAllowed:
        return _status(request, errors.method_not_allowed())
    except web.HTTPException:
        raise
    except Exception as e:  # a bug here must still answer as the API does
        log.exception("request failed", path=request.path, method=request.method)
        return _status(request, errors.internal(f"{type(e).__name__}: {e}"))
