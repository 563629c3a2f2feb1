"""Conformance cases for writes that carry their envelope (storage.proto's
Envelope): the value, final already (strata.storage.envelopes.final), is kept
as it was given and every read answers it stamped with its revision, for
built-in and custom resources alike; the same object written without an
envelope is answered with the same bytes; and guaranteed_update takes final
values too. One of the areas `_cases.py` gathers into CASES."""

from __future__ import annotations

import uuid
from typing import Any

import orjson

from strata.proto.storage.v1 import storage_pb2
from strata.storage import envelopes
from strata.storage._interface import GetOptions, ListOptions, WatchOptions
from strata.storage._update import UpdateFn, guaranteed_update
from strata.storage.conformance._registry import Cases
from strata.storage.conformance._suite import Event, Suite, events

CASES = Cases()
case = CASES.case


def _object(name: str, **data: str) -> dict[str, Any]:
    """An object as a writer holds it before encoding it: out of kube's order,
    with a resourceVersion the final value leaves out."""
    return {
        "data": data,
        "metadata": {
            "resourceVersion": "12",
            "labels": {"app": name},
            "uid": f"uid-{name}",
            "namespace": "ns",
            "name": name,
            "ownerReferences": [{"kind": "Owner", "name": "o", "uid": "uid-o"}],
        },
        "kind": "Thing",
        "apiVersion": "v1",
    }


async def _roots(suite: Suite) -> list[str]:
    """A built-in resource's prefix and a custom resource's (its group has a
    dot), both served from now on (see Suite.resource)."""
    custom = f"/conformance{uuid.uuid4().hex[:10]}.example.com/things/"
    await suite.storage.list(custom, ListOptions())
    return [await suite.resource(), custom]


def _answers(stored: storage_pb2.Object, written: envelopes.Final, key: str) -> None:
    """Assert stored is written's value as given, stamped with its revision, and
    carries the envelope's fields."""
    at = written.envelope.resource_version_at
    assert stored.value == envelopes.stamped(written.value, at, stored.resource_version)
    assert stored.key == key
    assert (stored.namespace, stored.name, stored.uid) == ("ns", "a", "uid-a")
    assert dict(stored.labels) == {"app": "a"} and stored.owned and not stored.deleting


@case
async def create_with_an_envelope_keeps_the_value_as_given(suite: Suite) -> None:
    for root in await _roots(suite):
        key = f"{root}ns/a"
        written = envelopes.final(key, _object("a", v="1"))
        stream = suite.storage.watch(root, WatchOptions(resource_version="0"))
        created = await suite.storage.create(key, written.value, envelope=written.envelope)
        _answers(created, written, key)
        _answers(await suite.storage.get(key), written, key)
        exact = GetOptions(
            resource_version=str(created.resource_version), resource_version_match="Exact"
        )
        _answers(await suite.storage.get(key, exact), written, key)
        listed = await suite.storage.list(root, ListOptions())
        assert [item.value for item in listed.items] == [created.value]
        (added,) = await events(stream, 1)
        await stream.aclose()
        assert added.type == Event.ADDED
        _answers(added.object, written, key)


@case
async def update_with_an_envelope_keeps_the_value_as_given(suite: Suite) -> None:
    for root in await _roots(suite):
        key = f"{root}ns/a"
        created = await suite.storage.create(key, orjson.dumps(_object("a", v="1")))
        written = envelopes.final(key, _object("a", v="2"))
        updated = await suite.storage.update(
            key,
            written.value,
            expected_resource_version=created.resource_version,
            envelope=written.envelope,
        )
        _answers(updated, written, key)
        _answers(await suite.storage.get(key), written, key)


@case
async def a_write_without_an_envelope_answers_what_one_with_it_does(suite: Suite) -> None:
    """Storage puts a value sent without an envelope in kube's order and drops
    its resourceVersion itself: the bytes a writer's final value has."""
    for root in await _roots(suite):
        key = f"{root}ns/a"
        written = envelopes.final(key, _object("a", v="1"))
        created = await suite.storage.create(key, orjson.dumps(_object("a", v="1")))
        _answers(created, written, key)
        _answers(await suite.storage.get(key), written, key)


def _returning(written: envelopes.Final) -> UpdateFn:
    async def update(current: storage_pb2.Object) -> envelopes.Final:
        return written

    return update


@case
async def guaranteed_update_writes_a_final_value_unless_nothing_changed(suite: Suite) -> None:
    for root in await _roots(suite):
        key = f"{root}ns/a"
        created = await suite.storage.create(key, orjson.dumps(_object("a", v="1")))
        same = envelopes.final(key, _object("a", v="1"))
        kept = await guaranteed_update(suite.storage, key, _returning(same))
        assert kept.resource_version == created.resource_version
        written = envelopes.final(key, _object("a", v="2"))
        changed = await guaranteed_update(suite.storage, key, _returning(written))
        assert changed.resource_version > created.resource_version
        _answers(changed, written, key)
