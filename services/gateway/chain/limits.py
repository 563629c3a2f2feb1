"""kube's max-in-flight filter: read-only and mutating requests counted apart,
each refused with 429 and Retry-After past its limit; watches, long-running,
are exempt, and so is what kube's `exempt` priority level serves: the
superuser group (system:masters) and the health probes, so that a busy
gateway still answers its own readiness probe and its operators."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from services.gateway import user
from services.gateway.chain.metrics import RequestMetrics, labels_of
from strata.api import errors

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# kube's --max-requests-inflight and --max-mutating-requests-inflight defaults.
MAX_READ_ONLY_IN_FLIGHT = 400
MAX_MUTATING_IN_FLIGHT = 200
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# kube's `probes` FlowSchema's paths (its `exempt` FlowSchema's group is the
# superuser group).
PROBES = frozenset({"/healthz", "/readyz", "/livez"})


def exempt(request: web.Request) -> bool:
    """Whether request is never counted: long-running, a probe, or a superuser's."""
    if labels_of(request).long_running or request.path in PROBES:
        return True
    return user.SUPERUSER_GROUP in user.of(request).groups


class InFlight:
    """kube's max-in-flight filter: read-only and mutating requests counted apart,
    each refused with 429 past its limit (0: no limit); watches are exempt."""

    def __init__(
        self,
        metrics: RequestMetrics,
        *,
        read_only: int = MAX_READ_ONLY_IN_FLIGHT,
        mutating: int = MAX_MUTATING_IN_FLIGHT,
    ) -> None:
        self._gauge = metrics.in_flight
        self._limits = {"readOnly": read_only, "mutating": mutating}
        self._current = {"readOnly": 0, "mutating": 0}

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if exempt(request):
            return await handler(request)
        kind = "mutating" if request.method in MUTATING else "readOnly"
        limit = self._limits[kind]
        if limit and self._current[kind] >= limit:
            raise errors.too_many_requests("Too many requests, please try again later.", 1)
        self._current[kind] += 1
        self._gauge.labels(kind).set(self._current[kind])
        try:
            return await handler(request)
        finally:
            self._current[kind] -= 1
            self._gauge.labels(kind).set(self._current[kind])
