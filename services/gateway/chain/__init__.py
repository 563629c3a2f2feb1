"""The request chain: what happens to every request before a handler sees it,
as small steps, each one of kube-apiserver's filters:

1. a server span (tracing.py) and the request metrics (metrics.py), around
   everything, so that refusals are traced and counted too;
2. Status rendering (status.py): whatever a step or handler raises, answered
   as kube's Status;
3. authentication (authentication.py): the user, or 401; then, with an
   audit policy, the audit step (audit.py, services/gateway/audit/): the
   request's events in the audit log (a 401's too, from a step in front of
   authentication, and the objects from one just before the handler);
4. impersonation (impersonation.py): Impersonate-* headers, which the
   authorizer must allow, change the user (400, or 403);
5. authorization (authorization.py): the authorizer's decision, or 403;
6. output negotiation (services/gateway/output.py), which the handlers also
   read for what they render themselves;
7. in-flight limits (limits.py): 429 past them;
8. timeouts (timeouts.py): 504 past the request's deadline, a body still
   arriving then answered and its connection closed (bodies.py).

(kube starts its deadline before authentication, and counts a request in
flight before authorizing it; strata's limits keep the places they had before
authorization was a step.) The audit id (audit.py) is a response hook rather
than a step, so that every answer carries it, the first steps' included. The
handlers import none of this package (an import-linter contract in
pyproject.toml)."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware

from services.gateway import output
from services.gateway.audit import Auditor
from services.gateway.authorizers import Authorizer
from services.gateway.chain import (
    audit,
    authentication,
    authorization,
    bodies,
    impersonation,
    limits,
    status,
    timeouts,
    tracing,
)
from services.gateway.chain.metrics import RequestMetrics


@dataclass(frozen=True, kw_only=True)
class Limits:
    """How many requests may be in flight at once, and for how long each."""

    read_only: int = limits.MAX_READ_ONLY_IN_FLIGHT
    mutating: int = limits.MAX_MUTATING_IN_FLIGHT
    timeout_seconds: float = timeouts.REQUEST_TIMEOUT_SECONDS


def middlewares(
    *,
    metrics: RequestMetrics,
    authenticate: authentication.RequestAuthenticator,
    authorizer: Authorizer,
    bounds: Limits,
    auditor: Auditor | None = None,
) -> list[Middleware]:
    """The steps, in the order a request goes through them (the audit steps
    only with an auditor)."""
    in_flight = limits.InFlight(metrics, read_only=bounds.read_only, mutating=bounds.mutating)
    steps = audit.AuditSteps(auditor) if auditor is not None else None
    return [
        tracing.trace_requests,
        metrics.middleware,
        status.render_status,
        *([steps.received] if steps else []),
        authentication.middleware(authenticate),
        *([steps.audit] if steps else []),
        impersonation.middleware(authorizer),
        authorization.middleware(authorizer),
        output.render_output,
        in_flight.middleware,
        timeouts.timeouts(bounds.timeout_seconds),
        *([steps.objects] if steps else []),
    ]


def install_hooks(app: web.Application, auditor: Auditor | None = None) -> None:
    """What the chain does to every response as it starts: its audit id (and
    a long-running request's ResponseStarted event), and Connection: close
    if its request's body has not all arrived; and the audit log's writer,
    started and stopped with the app."""
    app.on_response_prepare.append(audit.audit_id)
    app.on_response_prepare.append(bodies.close_unfinished)
    if auditor is not None:
        app.on_startup.append(auditor.start)
        app.on_cleanup.append(auditor.close)
