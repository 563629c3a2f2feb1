"""What strata's Prometheus metrics share: the metrics port every service may
open (Prometheus text at /metrics for one prometheus-client registry, on its own
small aiohttp server), kube's latency buckets, and a histogram cheap enough to
observe on every request."""

from __future__ import annotations

import itertools
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

# How prometheus_client writes a bucket's le (its own function, untyped there).
_le_text: Callable[[float], str] = floatToGoString

# kube's buckets for apiserver_request_duration_seconds and etcd_request_duration_seconds.
LATENCY_BUCKETS = (
    0.005,
    0.025,
    0.05,
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    1.25,
    1.5,
    2,
    3,
    4,
    5,
    6,
    8,
    10,
    15,
    20,
    30,
    45,
    60,
)


class _HistogramChild:
    __slots__ = ("_bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, amount: float) -> None:
        self.counts[bisect_left(self._bounds, amount)] += 1
        self.sum += amount


class Histogram:
    """A Prometheus histogram observed and collected on one event loop only.

    prometheus_client's takes a lock for the sum and for the bucket on every
    observation and walks the buckets in Python: a few microseconds, which the
    storage service paid on every etcd request (~5% of its CPU per create,
    measured). Here an observation is a bisect and two additions, and the
    cumulative buckets are made when the registry is scraped; the exposition
    is prometheus_client's own for a histogram (without the _created series,
    which kube's metrics do not have either).
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        self._name, self._documentation = name, documentation
        self._labelnames = tuple(labelnames)
        self._bounds = tuple(float(b) for b in buckets)
        self._les = [*(_le_text(b) for b in self._bounds), "+Inf"]
        self._children: dict[tuple[str, ...], _HistogramChild] = {}
        registry.register(self)

    def labels(self, *values: str) -> _HistogramChild:
        child = self._children.get(values)
        if child is None:
            if len(values) != len(self._labelnames):
                raise ValueError(f"{self._name}: labels {self._labelnames}, given {values}")
            child = self._children[values] = _HistogramChild(self._bounds)
        return child

    def describe(self) -> Iterator[Metric]:
        yield HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for values, child in self._children.items():
            cumulative = [float(c) for c in itertools.accumulate(child.counts)]
            family.add_metric(
                list(values), list(zip(self._les, cumulative, strict=True)), child.sum
            )
        yield family


async def serve_metrics(listen: str, registry: CollectorRegistry) -> web.AppRunner:
    """Serve registry at http://listen/metrics until the returned runner is cleaned up."""

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, _, port = listen.rpartition(":")
    await web.TCPSite(runner, host, int(port)).start()
    return runner
