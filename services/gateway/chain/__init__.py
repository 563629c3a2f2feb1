"""The request chain: what happens to every request before a handler sees it,
as small steps, each one of kube-apiserver's filters:

1. a server span (tracing.py) and the request metrics (metrics.py), around
   everything, so that refusals are traced and counted too;
2. Status rendering (status.py): whatever a step or handler raises, answered
   as kube's Status;
3. authentication (authentication.py): the user, or 401;
4. impersonation: not yet (strata ignores Impersonate-* headers); its place
   is here, between authentication and authorization, as in kube;
5. authorization (authorization.py): the authorizer's decision, or 403;
6. output negotiation (services/gateway/output.py), which the handlers also
   read for what they render themselves;
7. in-flight limits (limits.py): 429 past them;
8. timeouts (timeouts.py): 504 past the request's deadline.

(kube starts its deadline before authentication, and counts a request in
flight before authorizing it; strata's limits keep the places they had before
authorization was a step.) The audit id (audit.py) is a response hook rather
than a step, so that every answer carries it, the first steps' included. The
handlers import none of this package (an import-linter contract in
pyproject.toml)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware

from services.gateway import output
from services.gateway.authorizers import Authorizer
from services.gateway.chain import (
    audit,
    authentication,
    authorization,
    limits,
    status,
    timeouts,
    tracing,
)
from services.gateway.chain.metrics import RequestMetrics
from services.gateway.user import User


@dataclass(frozen=True, kw_only=True)
class Limits:
    """How many requests may be in flight at once, and for how long each."""

    read_only: int = limits.MAX_READ_ONLY_IN_FLIGHT
    mutating: int = limits.MAX_MUTATING_IN_FLIGHT
    timeout_seconds: float = timeouts.REQUEST_TIMEOUT_SECONDS


def middlewares(
    *,
    metrics: RequestMetrics,
    authenticate: Callable[[web.Request], User | None],
    authorizer: Authorizer,
    bounds: Limits,
) -> list[Middleware]:
    """The steps, in the order a request goes through them."""
    in_flight = limits.InFlight(metrics, read_only=bounds.read_only, mutating=bounds.mutating)
    return [
        tracing.trace_requests,
        metrics.middleware,
        status.render_status,
        authentication.middleware(authenticate),
        authorization.middleware(authorizer),
        output.render_output,
        in_flight.middleware,
        timeouts.timeouts(bounds.timeout_seconds),
    ]


def install_hooks(app: web.Application) -> None:
    """What the chain does to every response as it starts: its audit id."""
    app.on_response_prepare.append(audit.audit_id)
