"""kube-apiserver's request metrics, under its names and labels, served at
/metrics: every request counted and timed by the code it was answered with,
watches counted as long-running. Also the request's labels (kube's verb and
scope), worked out once for every step of the chain that asks."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)

from services.gateway import paths
from strata.metrics_http import LATENCY_BUCKETS, Histogram

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

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

    async def serve(self, _: web.Request) -> web.Response:
        """GET /metrics: the metrics in Prometheus' text format."""
        return web.Response(
            body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
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
