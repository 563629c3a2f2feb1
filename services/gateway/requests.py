"""What the gateway does around every request, as kube-apiserver's filters do:
an Audit-ID on every response, limits on requests in flight (429 with
Retry-After past them) and on how long a request may take (504; `?timeout=`
shortens it), watches exempt from both as long-running, and the request metrics
under kube's names and labels, served at /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client import CollectorRegistry, Counter, Gauge

from services.gateway import paths
from strata.api import errors
from strata.metrics_http import LATENCY_BUCKETS, Histogram
from strata.service import parse_duration

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# kube's --request-timeout default: how long a request that is not a watch may take.
REQUEST_TIMEOUT_SECONDS = 60.0
# kube's --max-requests-inflight and --max-mutating-requests-inflight defaults.
MAX_READ_ONLY_IN_FLIGHT = 400
MAX_MUTATING_IN_FLIGHT = 200
MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component")


class RequestMetrics:
    """kube-apiserver's request metrics, in a registry of their own."""

    def __init__(self) -> None:
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self.registry = CollectorRegistry()
        self.total = Counter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out for each verb, dry run value, group, "
            "version, resource, scope, component, and HTTP response code.",
            [*_LABELS, "code"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, "
            "version, resource, subresource, scope and component.",
            _LABELS,
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per "
            "request kind in last second.",
            ["request_kind"],
            registry=self.registry,
        )
        self.long_running = Gauge(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, "
            "version, resource, scope and component. Not all requests are tracked this way.",
            _LABELS,
            registry=self.registry,
        )

    def _child(self, metric: Any, values: tuple[str, ...]) -> Any:
        """metric's child for values, looked up once (prometheus_client's labels()
        checks and locks on every call)."""
        key = (id(metric), values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Counts and times every request by the code it was answered with (the
        Status middleware inside it has rendered errors by then). A request
        cancelled because its client went away answered nothing, and is not
        counted."""
        labels = labels_of(request)
        values = labels.values()
        started = time.perf_counter()
        code: int | None = 500
        tracked = self._child(self.long_running, values) if labels.long_running else None
        if tracked is not None:
            tracked.inc()
        try:
            response = await handler(request)
            code = response.status
            return response
        except web.HTTPException as e:
            code = e.status
            raise
        except asyncio.CancelledError:
            code = None
            raise
        finally:
            if tracked is not None:
                tracked.dec()
            if code is not None:
                self._child(self.total, (*values, str(code))).inc()
                if tracked is None:
                    self._child(self.duration, values).observe(time.perf_counter() - started)


@dataclass(frozen=True)
class Labels:
    """A request as kube's metrics describe it."""

    verb: str
    dry_run: str
    group: str
    version: str
    resource: str
    subresource: str
    scope: str

    @property
    def long_running(self) -> bool:
        return self.verb == "WATCH"

    def values(self) -> tuple[str, ...]:
        return (
            self.verb,
            self.dry_run,
            self.group,
            self.version,
            self.resource,
            self.subresource,
            self.scope,
            "apiserver",
        )


_LABELS_KEY = web.RequestKey("strata.request_labels", Labels)


def labels_of(request: web.Request) -> Labels:
    """kube's verb (upper case: LIST for a collection's GET, WATCH, APPLY for an
    apply patch...) and scope (resource, namespace or cluster) of a request,
    worked out once per request for every filter that asks."""
    found: Labels | None = request.get(_LABELS_KEY)
    if found is None:
        found = request[_LABELS_KEY] = _labels(request)
    return found


def _labels(request: web.Request) -> Labels:
    method, query = request.method, request.query
    info = paths.info_of(request)
    dry_run = "All" if "dryRun" in query else ""
    if info is None or not info.resource:
        return Labels(method, dry_run, "", "", "", "", "")
    named = bool(info.name)
    if paths.watching(request, info):
        verb = "WATCH"
    elif method == "GET":
        verb = "GET" if named else "LIST"
    elif method == "DELETE" and not named:
        verb = "DELETECOLLECTION"
    elif method == "PATCH" and request.content_type == "application/apply-patch+yaml":
        verb = "APPLY"
    else:
        verb = method
    scope = "resource" if named else ("namespace" if info.namespace else "cluster")
    return Labels(verb, dry_run, info.group, info.version, info.resource, info.subresource, scope)


async def audit_id(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every response, streamed ones included, says which
    request it answers (the client's Audit-ID, or a new one)."""
    response.headers.setdefault("Audit-ID", request.headers.get("Audit-ID") or str(uuid.uuid4()))


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
        if labels_of(request).long_running:
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


def timeouts(default_seconds: float = REQUEST_TIMEOUT_SECONDS) -> Middleware:
    """kube's request deadline: a request that is not a watch answers 504 once it
    has taken its time (?timeout=, a Go duration, or the default, whichever is
    shorter; 0 or less: no limit). What it had set going may still finish."""

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
            raise errors.StatusError(
                code=504,
                reason="Timeout",
                message="Timeout: request did not complete within requested timeout - "
                "context deadline exceeded",
            ) from None

    return middleware
