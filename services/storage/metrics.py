"""The storage service's Prometheus metrics, under kube-apiserver's names."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Gauge

from strata import telemetry
from strata.etcd import Etcd, prefix_end
from strata.metrics_http import LATENCY_BUCKETS, Histogram
from strata.storage import resource_of, resource_root

REGISTRY = CollectorRegistry()
ETCD_REQUEST_DURATION = Histogram(
    "etcd_request_duration_seconds",
    "Etcd request latency in seconds for each operation and object type.",
    ["operation", "type"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
STORAGE_OBJECTS = Gauge(
    "apiserver_storage_objects",
    "Number of stored objects at the time of last check split by kind.",
    ["resource"],
    registry=REGISTRY,
)
TRANSFORMATION_DURATION = Histogram(
    "apiserver_storage_transformation_duration_seconds",
    "Latencies in seconds of value transformation operations.",
    ["transformation_type", "transformer_prefix"],
    # kube's: exponential from 5µs, doubling, 20 buckets.
    buckets=tuple(5e-6 * 2**i for i in range(20)),
    registry=REGISTRY,
)

log = telemetry.get_logger("strata.storage.metrics")


def resource_label(key: str) -> str:
    """ "configmaps" for "/configmaps/ns/a"; "widgets.example.com" for a custom resource."""
    # What names the resource is in the key's first two segments; the rest
    # (a name) would only make the cache miss.
    second = key.find("/", 1)
    end = key.find("/", second + 1) if second > 0 else -1
    return _label_of(key if end < 0 else key[: end + 1])


@functools.lru_cache(maxsize=4096)
def _label_of(head: str) -> str:
    group, resource = resource_of(head)
    return f"{resource}.{group}" if group else resource


class etcd_request:
    """Times one storage operation's etcd work into etcd_request_duration_seconds.

    A class rather than a generator context manager: it runs on every request.
    """

    __slots__ = ("_key", "_operation", "_started")

    def __init__(self, operation: str, key: str) -> None:
        self._operation, self._key = operation, key

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, *_: object) -> None:
        ETCD_REQUEST_DURATION.labels(self._operation, resource_label(self._key)).observe(
            time.perf_counter() - self._started
        )


@contextmanager
def transformation(kind: str, prefix: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        TRANSFORMATION_DURATION.labels(kind, prefix).observe(time.perf_counter() - started)


class ObjectCounter:
    """Counts the stored objects of every resource seen so far, every interval."""

    def __init__(self, etcd: Etcd, prefix: str, interval: float = 60.0) -> None:
        self._etcd = etcd
        self._prefix = prefix.rstrip("/")
        self._interval = interval
        self._roots: dict[str, str] = {}
        self._new_resource = asyncio.Event()

    def saw(self, key: str) -> None:
        label = resource_label(key)
        if label and label not in self._roots:
            self._roots[label] = resource_root(key)
            self._new_resource.set()  # count it now rather than an interval from now

    async def count_once(self) -> None:
        for label, root in list(self._roots.items()):
            start = (self._prefix + root).encode()
            response = await self._etcd.range(start, prefix_end(start), count_only=True)
            STORAGE_OBJECTS.labels(label).set(response.count)

    async def run(self) -> None:
        while True:
            try:
                await self.count_once()
            except Exception as e:  # an etcd outage must not end the loop
                log.warning("counting objects failed", error=str(e))
            self._new_resource.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._new_resource.wait(), self._interval)
