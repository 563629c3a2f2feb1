"""The cacher's kube flags: --watch-cache-sizes as kube-apiserver v1.36 reads it
(`kube-apiserver --help`: "resource[.group]#size ... The only meaningful size
setting to supply here is zero, which means to disable watch caching for the
associated resource; all non-zero values are equivalent"), with events' cache
off unless named (kube's DefaultWatchCacheSizes: a watch_cache_capacity metric
for configmaps and none for events, and a watch of events from
resourceVersion=1 answered from etcd). The messages are kube's, from
`kube-apiserver --watch-cache-sizes=configmaps#x` and the like."""

from __future__ import annotations

import pytest

from services.cacher.__main__ import uncached_roots
from services.cacher.storage import UNCACHED


def test_events_are_not_cached_by_default() -> None:
    assert uncached_roots("") == UNCACHED == frozenset({"/events/"})


def test_a_size_of_zero_turns_a_cache_off_and_any_other_size_on() -> None:
    assert uncached_roots("configmaps#0, deployments.apps#0,widgets.example.com#0") == {
        "/events/",
        "/configmaps/",
        "/deployments/",
        "/example.com/widgets/",
    }
    assert uncached_roots("events#100") == frozenset()
    assert uncached_roots("events.events.k8s.io#1") == frozenset()
    assert uncached_roots("services#0,endpoints#0,configmaps#1000") == {
        "/events/",
        "/services/specs/",
        "/services/endpoints/",
    }


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("configmaps", "invalid value of watch cache size: configmaps"),
        ("configmaps#x", "invalid size of watch cache size: configmaps#x"),
        ("configmaps#", "invalid size of watch cache size: configmaps#"),
        ("configmaps#1#2", "invalid value of watch cache size: configmaps#1#2"),
        ("configmaps#-1", "watch cache size cannot be negative: configmaps#-1"),
    ],
)
def test_a_bad_size_is_refused_with_kubes_message(flag: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        uncached_roots(flag)
    assert str(caught.value) == message
