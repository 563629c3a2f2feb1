"""Conformance cases for what is not one object's life: count under a prefix,
the current revision, revisions across writes, compaction, and labels in the
envelope. One of the areas `_cases.py` gathers into CASES; split out so each
area reads on its own."""

from __future__ import annotations

from strata.storage.conformance._registry import Cases
from strata.storage.conformance._steps import fill
from strata.storage.conformance._suite import Suite, data, obj

CASES = Cases()
case = CASES.case


@case
async def count_counts_the_objects_under_a_prefix(suite: Suite) -> None:
    root = suite.prefix()
    await fill(suite, root, 3, "ns1")
    await fill(suite, root, 2, "ns2")
    assert await suite.storage.count(root) == 5
    assert await suite.storage.count(f"{root}ns2/") == 2
    assert await suite.storage.count(suite.prefix()) == 0


@case
async def current_revision_moves_with_every_write(suite: Suite) -> None:
    before = await suite.storage.current_revision()
    created = await suite.storage.create(f"{suite.prefix()}ns/a", obj("a"))
    after = await suite.storage.current_revision()
    assert before < created.resource_version <= after


@case
async def revisions_increase_across_create_update_delete(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    a = await suite.storage.create(key, obj("a"))
    b = await suite.storage.update(
        key, obj("a", v="2"), expected_resource_version=a.resource_version
    )
    c = await suite.storage.delete(key)
    assert a.resource_version < b.resource_version < c.resource_version


@case
async def compaction_keeps_the_current_state_readable(suite: Suite) -> None:
    root = suite.prefix()
    await fill(suite, root, 3)
    await suite.storage.compact(await suite.storage.current_revision())
    result = await suite.storage.list(root)
    assert [o.name for o in result.items] == ["o000", "o001", "o002"]
    assert data(await suite.storage.get(f"{root}ns/o001")) == {}


@case
async def labels_travel_in_the_envelope(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a", labels={"x": "1", "y": "2"}))
    assert dict(created.labels) == {"x": "1", "y": "2"}
    assert dict((await suite.storage.get(key)).labels) == {"x": "1", "y": "2"}
