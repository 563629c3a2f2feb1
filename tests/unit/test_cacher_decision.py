"""The cacher's routing: which reads the cache answers, and which cache a key uses
(one per resource root)."""

from __future__ import annotations

import pytest

from services.cacher.decision import Op, served_from_cache
from strata.storage import resource_of, resource_root


@pytest.mark.parametrize(
    ("op", "rv", "cached"),
    [
        (Op.WATCH, "", True),
        (Op.WATCH, "0", True),
        (Op.WATCH, "17", True),
        (Op.GET, "0", True),
        (Op.LIST, "0", True),
        (Op.GET, "", False),
        (Op.LIST, "", False),
        (Op.LIST, "17", False),
    ],
)
def test_served_from_cache(op: Op, rv: str, cached: bool) -> None:
    assert served_from_cache(op, rv) is cached


@pytest.mark.parametrize(
    ("key", "root"),
    [
        ("/configmaps/demo/a", "/configmaps/"),
        ("/configmaps/", "/configmaps/"),
        ("/namespaces/demo", "/namespaces/"),
        ("/example.com/widgets/ns/w", "/example.com/widgets/"),
        ("/example.com/widgets/", "/example.com/widgets/"),
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
        ("/", ("", "")),
    ],
)
def test_resource_of(key: str, group_resource: tuple[str, str]) -> None:
    assert resource_of(key) == group_resource
