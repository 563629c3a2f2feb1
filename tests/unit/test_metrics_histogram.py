"""strata.metrics_http.Histogram exposes what prometheus_client's Histogram does."""

from __future__ import annotations

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from strata.metrics_http import LATENCY_BUCKETS, Histogram

OBSERVED = [
    (("get", "configmaps"), 0.0004),
    (("get", "configmaps"), 0.005),  # on a bound: that bucket, as `le` says
    (("get", "configmaps"), 0.0051),
    (("list", "pods"), 0.3),
    (("list", "pods"), 61.0),  # above every bound: +Inf only
    (("get", "configmaps"), 2.5),
]


def _text(registry: CollectorRegistry) -> list[str]:
    return [
        line
        for line in generate_latest(registry).decode().splitlines()
        if "_created" not in line  # prometheus_client's own extra series
    ]


@pytest.mark.parametrize(
    "buckets", [LATENCY_BUCKETS, tuple(5e-6 * 2**i for i in range(20))], ids=["latency", "tiny"]
)
def test_the_exposition_is_prometheus_clients(buckets: tuple[float, ...]) -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    fast = Histogram("x_seconds", "Help.", ["operation", "type"], buckets=buckets, registry=ours)
    reference = prometheus_client.Histogram(
        "x_seconds", "Help.", ["operation", "type"], buckets=buckets, registry=theirs
    )
    for labels, amount in OBSERVED:
        fast.labels(*labels).observe(amount)
        reference.labels(*labels).observe(amount)
    text = _text(ours)
    assert text == _text(theirs)
    # Two label sets, each with every bucket and +Inf: nothing was left out of both.
    assert sum(line.startswith("x_seconds_bucket{") for line in text) == 2 * (len(buckets) + 1)


def test_a_histogram_nobody_observed_is_named_and_empty() -> None:
    registry = CollectorRegistry()
    Histogram("y_seconds", "Help.", ["resource"], buckets=(1.0,), registry=registry)
    assert _text(registry) == ["# HELP y_seconds Help.", "# TYPE y_seconds histogram"]


def test_the_wrong_number_of_labels_is_refused() -> None:
    histogram = Histogram("z", "Help.", ["a", "b"], buckets=(1.0,), registry=CollectorRegistry())
    with pytest.raises(ValueError):
        histogram.labels("only-one")
