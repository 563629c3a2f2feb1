"""The cacher's routing: which reads the cache answers, and which cache a key uses
(one per resource root)."""

from __future__ import annotations

import pytest

from services.cacher.decision import Op, Plan, plan
from strata.storage import EXACT, NOT_OLDER_THAN, resource_of, resource_root


@pytest.mark.parametrize(
    ("op", "rv", "match", "answer"),
    [
        (Op.WATCH, "", "", Plan.CACHE),
        (Op.WATCH, "0", "", Plan.CACHE),
        (Op.WATCH, "17", "", Plan.CACHE),
        (Op.GET, "0", "", Plan.CACHE),
        (Op.LIST, "0", "", Plan.CACHE),
        (Op.LIST, "0", NOT_OLDER_THAN, Plan.CACHE),
        (Op.GET, "", "", Plan.CACHE_CURRENT),
        (Op.LIST, "", "", Plan.CACHE_CURRENT),
        (Op.LIST, "17", "", Plan.CACHE_NOT_OLDER),
        (Op.GET, "17", NOT_OLDER_THAN, Plan.CACHE_NOT_OLDER),
        (Op.GET, "17", EXACT, Plan.STORAGE),
        (Op.LIST, "17", EXACT, Plan.STORAGE),
    ],
)
def test_plan(op: Op, rv: str, match: str, answer: Plan) -> None:
    assert plan(op, rv, match=match) is answer


def test_continued_lists_go_to_storage() -> None:
    assert plan(Op.LIST, "", continuing=True) is Plan.STORAGE


@pytest.mark.parametrize(
    ("rv", "answer"),
    [("", Plan.CACHE_CURRENT), ("0", Plan.CACHE), ("17", Plan.CACHE_NOT_OLDER)],
)
def test_watch_lists_wait_for_freshness_like_lists(rv: str, answer: Plan) -> None:
    assert plan(Op.WATCH, rv, send_initial_events=True) is answer


@pytest.mark.parametrize(
    ("rv", "answer"),
    [("", Plan.CACHE_CURRENT), ("0", Plan.CACHE), ("17", Plan.CACHE)],
)
def test_a_watch_declining_initial_events_from_unset_starts_at_the_current_revision(
    rv: str, answer: Plan
) -> None:
    assert plan(Op.WATCH, rv, send_initial_events=False) is answer


def test_a_watch_saying_nothing_is_served_from_the_cache_as_it_is() -> None:
    assert all(plan(Op.WATCH, rv) is Plan.CACHE for rv in ("", "0", "17"))


@pytest.mark.parametrize(
    ("key", "root"),
    [
        ("/configmaps/demo/a", "/configmaps/"),
        ("/configmaps/", "/configmaps/"),
        ("/namespaces/demo", "/namespaces/"),
        ("/example.com/widgets/ns/w", "/example.com/widgets/"),
        ("/example.com/widgets/", "/example.com/widgets/"),
        ("/leases/kube-node-lease/n1", "/leases/"),
        ("/services/specs/default/kubernetes", "/services/specs/"),
        ("/services/endpoints/default/kubernetes", "/services/endpoints/"),
    ],
)
def test_resource_root(key: str, root: str) -> None:
    assert resource_root(key) == root


def test_resource_root_needs_a_resource() -> None:
    with pytest.raises(ValueError):
        resource_root("/")


@pytest.mark.parametrize(
    ("key", "group_resource"),
    [
        ("/secrets/ns/a", ("", "secrets")),
        ("/namespaces/demo", ("", "namespaces")),
        ("/example.com/widgets/ns/w", ("example.com", "widgets")),
        ("/leases/ns/a", ("coordination.k8s.io", "leases")),
        ("/services/specs/ns/a", ("", "services")),
        ("/services/endpoints/ns/a", ("", "endpoints")),
        ("/", ("", "")),
    ],
)
def test_resource_of(key: str, group_resource: tuple[str, str]) -> None:
    assert resource_of(key) == group_resource
