"""Conformance cases for changing and removing an object: compare-and-swap
update, guaranteed_update's retry loop, and delete with its preconditions.
One of the areas `_cases.py` gathers into CASES; split out so each area reads
on its own."""

from __future__ import annotations

import asyncio

import orjson

from strata.proto.storage.v1 import storage_pb2
from strata.storage._errors import Conflict, KeyNotFound, ObjectTooLarge
from strata.storage._interface import Preconditions
from strata.storage._update import guaranteed_update
from strata.storage.conformance._registry import Cases
from strata.storage.conformance._suite import Suite, data, obj, raises

CASES = Cases()
case = CASES.case


# --- update -----------------------------------------------------------------------


@case
async def update_compares_and_swaps(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a", v="1"))
    updated = await suite.storage.update(
        key, obj("a", v="2"), expected_resource_version=created.resource_version
    )
    assert updated.resource_version > created.resource_version and data(updated) == {"v": "2"}


@case
async def update_from_a_stale_revision_is_conflict(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a", v="1"))
    current = await suite.storage.update(
        key, obj("a", v="2"), expected_resource_version=created.resource_version
    )
    await raises(
        Conflict,
        suite.storage.update(
            key, obj("a", v="3"), expected_resource_version=created.resource_version
        ),
    )
    after = await suite.storage.get(key)
    assert data(after) == {"v": "2"} and after.resource_version == current.resource_version


@case
async def update_of_a_missing_key_is_key_not_found(suite: Suite) -> None:
    await raises(
        KeyNotFound,
        suite.storage.update(f"{suite.prefix()}ns/none", obj("none"), expected_resource_version=1),
    )


@case
async def update_to_an_oversized_object_is_object_too_large(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a"))
    await raises(
        ObjectTooLarge,
        suite.storage.update(
            key, obj("a", blob="x" * 1_600_000), expected_resource_version=created.resource_version
        ),
    )
    assert (await suite.storage.get(key)).resource_version == created.resource_version


@case
async def guaranteed_update_loses_no_concurrent_update(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/counter"
    await suite.storage.create(key, obj("counter", n="0"))

    async def increment(current: storage_pb2.Object) -> bytes:
        body = orjson.loads(current.value)
        body["data"]["n"] = str(int(body["data"]["n"]) + 1)
        return orjson.dumps(body)

    await asyncio.gather(*(guaranteed_update(suite.storage, key, increment) for _ in range(25)))
    assert data(await suite.storage.get(key)) == {"n": "25"}


@case
async def guaranteed_update_that_raises_writes_nothing(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a"))

    async def refuse(_: storage_pb2.Object) -> bytes:
        raise ValueError("no")

    await raises(ValueError, guaranteed_update(suite.storage, key, refuse))
    assert (await suite.storage.get(key)).resource_version == created.resource_version


@case
async def guaranteed_update_that_changes_nothing_writes_nothing(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a"))

    async def unchanged(current: storage_pb2.Object) -> bytes:
        return current.value

    answered = await guaranteed_update(suite.storage, key, unchanged)
    assert answered.resource_version == created.resource_version
    assert (await suite.storage.get(key)).resource_version == created.resource_version


@case
async def guaranteed_update_of_a_missing_key_is_key_not_found(suite: Suite) -> None:
    async def unchanged(current: storage_pb2.Object) -> bytes:
        return current.value

    await raises(
        KeyNotFound, guaranteed_update(suite.storage, f"{suite.prefix()}ns/none", unchanged)
    )


# --- delete -----------------------------------------------------------------------


@case
async def delete_returns_the_last_state_at_the_delete_revision(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a", v="1"))
    deleted = await suite.storage.delete(key)
    assert deleted.resource_version > created.resource_version
    assert data(deleted) == {"v": "1"}
    assert orjson.loads(deleted.value)["metadata"]["resourceVersion"] == str(
        deleted.resource_version
    )
    await raises(KeyNotFound, suite.storage.get(key))


@case
async def delete_of_a_missing_key_is_key_not_found(suite: Suite) -> None:
    await raises(KeyNotFound, suite.storage.delete(f"{suite.prefix()}ns/none"))


@case
async def delete_with_a_wrong_uid_is_conflict(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    await suite.storage.create(key, obj("a"))
    await raises(Conflict, suite.storage.delete(key, preconditions=Preconditions(uid="other")))
    assert (await suite.storage.get(key)).name == "a"


@case
async def delete_with_a_stale_resource_version_is_conflict(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a", v="1"))
    await suite.storage.update(
        key, obj("a", v="2"), expected_resource_version=created.resource_version
    )
    await raises(
        Conflict,
        suite.storage.delete(
            key, preconditions=Preconditions(resource_version=str(created.resource_version))
        ),
    )
    assert data(await suite.storage.get(key)) == {"v": "2"}


@case
async def delete_with_matching_preconditions_deletes(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a"))
    await suite.storage.delete(
        key,
        preconditions=Preconditions(uid="uid-a", resource_version=str(created.resource_version)),
    )
    await raises(KeyNotFound, suite.storage.get(key))


@case
async def delete_then_create_again_starts_a_new_object(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    first = await suite.storage.create(key, obj("a", v="1"))
    await suite.storage.delete(key)
    second = await suite.storage.create(key, obj("a", v="2"))
    assert second.resource_version > first.resource_version and data(second) == {"v": "2"}
