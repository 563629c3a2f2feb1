"""Conformance cases for writing an object and reading it back: create (at its
revision, over an existing key, with a TTL, of bad input) and get (missing
keys, each resourceVersion and match, malformed options). One of the areas
`_cases.py` gathers into CASES; split out so each area reads on its own."""

from __future__ import annotations

import orjson

from strata.proto.storage.v1 import storage_pb2
from strata.storage._errors import (
    Expired,
    InvalidObject,
    InvalidRequest,
    KeyExists,
    KeyNotFound,
    ObjectTooLarge,
    TooLargeResourceVersion,
)
from strata.storage._interface import EXACT, NOT_OLDER_THAN, GetOptions
from strata.storage.conformance._registry import Cases
from strata.storage.conformance._suite import Suite, data, eventually, obj, raises

CASES = Cases()
case = CASES.case


# --- create -----------------------------------------------------------------------


@case
async def create_returns_the_stored_object_at_its_revision(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a", k="v"))
    assert created.resource_version > 0
    assert (created.key, created.name, created.namespace, created.uid) == (key, "a", "ns", "uid-a")
    body = orjson.loads(created.value)
    assert body["metadata"]["resourceVersion"] == str(created.resource_version)
    assert body["data"] == {"k": "v"}


@case
async def create_over_an_existing_key_is_key_exists(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    first = await suite.storage.create(key, obj("a", v="1"))
    await raises(KeyExists, suite.storage.create(key, obj("a", v="2")))
    again = await suite.storage.get(key)
    assert data(again) == {"v": "1"} and again.resource_version == first.resource_version


@case
async def create_ignores_a_supplied_resource_version(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    body = orjson.loads(obj("a"))
    body["metadata"]["resourceVersion"] = "999999"
    created = await suite.storage.create(key, orjson.dumps(body))
    assert orjson.loads(created.value)["metadata"]["resourceVersion"] == str(
        created.resource_version
    )


async def _expires(suite: Suite, key: str) -> None:
    """Return once key's object has expired (etcd's shortest lease is ~2 s)."""

    async def gone() -> None:
        try:
            await suite.storage.get(key)
        except KeyNotFound:
            return
        raise AssertionError("still there")

    await eventually(gone, within=15)


@case
async def create_with_ttl_expires_the_object(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/short"
    await suite.storage.create(key, obj("short"), ttl_seconds=1)
    await _expires(suite, key)


@case
async def update_with_ttl_expires_the_object_and_without_keeps_it(suite: Suite) -> None:
    """An update sets the TTL afresh: with one the object expires, without one
    a TTL it had goes (as kube's events are written, each write its own TTL)."""
    expiring, kept = f"{suite.prefix()}ns/expiring", f"{suite.prefix()}ns/kept"
    created = await suite.storage.create(kept, obj("kept"), ttl_seconds=1)
    await suite.storage.update(
        kept, obj("kept"), expected_resource_version=created.resource_version
    )
    created = await suite.storage.create(expiring, obj("expiring"))
    await suite.storage.update(
        expiring, obj("expiring"), expected_resource_version=created.resource_version, ttl_seconds=1
    )

    await _expires(suite, expiring)
    # kept's TTL was asked for first: had it stayed, kept would be gone too.
    await suite.storage.get(kept)


@case
async def create_of_a_non_object_is_invalid_object(suite: Suite) -> None:
    root = suite.prefix()
    for bad in (b"not json", b"[1,2]", b'{"metadata": 5}'):
        await raises(InvalidObject, suite.storage.create(f"{root}ns/a", bad))
    assert await suite.storage.count(root) == 0


@case
async def create_of_an_oversized_object_is_object_too_large(suite: Suite) -> None:
    root = suite.prefix()
    await raises(
        ObjectTooLarge, suite.storage.create(f"{root}ns/big", obj("big", blob="x" * 1_600_000))
    )
    assert await suite.storage.count(root) == 0


@case
async def create_at_a_malformed_key_is_invalid_object(suite: Suite) -> None:
    for key in ("relative/key", "/a/../../escape"):
        await raises(InvalidObject, suite.storage.create(key, obj("a")))


# --- get --------------------------------------------------------------------------


@case
async def get_of_a_missing_key_is_key_not_found(suite: Suite) -> None:
    await raises(KeyNotFound, suite.storage.get(f"{suite.prefix()}ns/missing"))


@case
async def get_ignoring_not_found_returns_an_empty_object(suite: Suite) -> None:
    got = await suite.storage.get(f"{suite.prefix()}ns/missing", GetOptions(ignore_not_found=True))
    assert got.value == b"" and got.resource_version > 0


@case
async def get_with_no_resource_version_sees_the_latest_write(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a", v="1"))
    updated = await suite.storage.update(
        key, obj("a", v="2"), expected_resource_version=created.resource_version
    )
    got = await suite.storage.get(key)
    assert got.resource_version == updated.resource_version and data(got) == {"v": "2"}


@case
async def get_at_resource_version_zero_returns_the_object(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a"))

    async def read() -> storage_pb2.Object:
        try:
            return await suite.storage.get(key, GetOptions(resource_version="0"))
        except KeyNotFound:
            raise AssertionError("not visible yet") from None

    got = await eventually(read)
    assert got.resource_version == created.resource_version


@case
async def get_not_older_than_a_reached_revision_succeeds(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a"))
    for match in ("", NOT_OLDER_THAN):
        got = await suite.storage.get(
            key,
            GetOptions(
                resource_version=str(created.resource_version), resource_version_match=match
            ),
        )
        assert got.resource_version == created.resource_version


@case
async def get_not_older_than_a_future_revision_is_too_large(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    await suite.storage.create(key, obj("a"))
    future = await suite.hooks.current_revision() + 1000
    await raises(
        TooLargeResourceVersion, suite.storage.get(key, GetOptions(resource_version=str(future)))
    )


@case
async def get_exact_reads_the_state_at_that_revision(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a", v="1"))
    await suite.storage.update(
        key, obj("a", v="2"), expected_resource_version=created.resource_version
    )
    old = await suite.storage.get(
        key,
        GetOptions(resource_version=str(created.resource_version), resource_version_match=EXACT),
    )
    assert data(old) == {"v": "1"} and old.resource_version == created.resource_version


@case
async def get_exact_at_a_compacted_revision_is_expired(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    created = await suite.storage.create(key, obj("a", v="1"))
    await suite.storage.update(
        key, obj("a", v="2"), expected_resource_version=created.resource_version
    )
    await suite.hooks.compact(await suite.hooks.current_revision())
    await raises(
        Expired,
        suite.storage.get(
            key,
            GetOptions(
                resource_version=str(created.resource_version), resource_version_match=EXACT
            ),
        ),
    )


@case
async def get_with_malformed_options_is_invalid_request(suite: Suite) -> None:
    key = f"{suite.prefix()}ns/a"
    await suite.storage.create(key, obj("a"))
    for options in (
        GetOptions(resource_version="abc"),
        GetOptions(resource_version="-3"),
        GetOptions(resource_version="5", resource_version_match="Sometimes"),
        GetOptions(resource_version="0", resource_version_match=EXACT),
        GetOptions(resource_version_match=EXACT),
    ):
        await raises(InvalidRequest, suite.storage.get(key, options))
