"""The cacher's Prometheus metrics, under kube-apiserver's names, labelled by
resource (the first segment of the storage key)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from strata.metrics_http import Histogram

REGISTRY = CollectorRegistry()

events_received = Counter(
    "apiserver_watch_cache_events_received",
    "Events the watch cache received from storage.",
    ["resource"],
    registry=REGISTRY,
)
events_dispatched = Counter(
    "apiserver_watch_cache_events_dispatched",
    "Events the watch cache dispatched to its watchers (once per event).",
    ["resource"],
    registry=REGISTRY,
)
watch_events = Counter(
    "apiserver_watch_events",
    "Events sent to watch clients.",
    ["resource"],
    registry=REGISTRY,
)
read_wait = Histogram(
    "apiserver_watch_cache_read_wait_seconds",
    "How long a read waited for the watch cache to become fresh enough.",
    ["resource"],
    buckets=(0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3),
    registry=REGISTRY,
)
capacity = Gauge(
    "apiserver_watch_cache_capacity",
    "The capacity of the watch cache's event window.",
    ["resource"],
    registry=REGISTRY,
)
terminated_watchers = Counter(
    "apiserver_terminated_watchers",
    "Watchers closed because they could not keep up.",
    ["resource"],
    registry=REGISTRY,
)
registered_watchers = Gauge(
    "apiserver_registered_watchers",
    "Watchers currently registered with the watch cache.",
    ["resource"],
    registry=REGISTRY,
)
