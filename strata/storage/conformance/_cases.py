"""The conformance cases. Each is `async def name(suite) -> None`, asserting
with plain `assert`; registered in CASES by the @case decorator."""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import AsyncGenerator, Awaitable, Callable
from functools import partial

import orjson

from strata.proto.storage.v1 import storage_pb2
from strata.storage._errors import (
    Conflict,
    Expired,
    InvalidObject,
    InvalidRequest,
    KeyExists,
    KeyNotFound,
    ObjectTooLarge,
    TooLargeResourceVersion,
)
from strata.storage._interface import (
    EXACT,
    NOT_OLDER_THAN,
    GetOptions,
    ListOptions,
    Preconditions,
    Predicate,
    WatchOptions,
)
from strata.storage._update import guaranteed_update
from strata.storage.conformance._suite import (
    Event,
    Suite,
    data,
    events,
    eventually,
    obj,
    quiet,
    raises,
)

Case = Callable[[Suite], Awaitable[None]]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


async def _fill(suite: Suite, root: str, count: int, namespace: str = "ns") -> list[int]:
    revisions = []
    for i in range(count):
        created = await suite.storage.create(
            f"{root}{namespace}/o{i:03d}", obj(f"o{i:03d}", namespace)
        )
        revisions.append(created.resource_version)
    return revisions


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


# --- list -------------------------------------------------------------------------


@case
async def list_of_an_empty_prefix_is_empty_at_the_current_revision(suite: Suite) -> None:
    before = await suite.hooks.current_revision()
    result = await suite.storage.list(suite.prefix())
    assert result.items == [] and result.resource_version >= before
    assert result.continue_token == ""


@case
async def list_returns_items_in_key_order(suite: Suite) -> None:
    root = suite.prefix()
    for name in ("c", "a", "b"):
        await suite.storage.create(f"{root}ns/{name}", obj(name))
    result = await suite.storage.list(root)
    assert [o.name for o in result.items] == ["a", "b", "c"]


@case
async def list_stays_inside_its_prefix(suite: Suite) -> None:
    root = suite.prefix()
    await suite.storage.create(f"{root}ns1/a", obj("a", "ns1"))
    await suite.storage.create(f"{root}ns10/b", obj("b", "ns10"))
    await suite.storage.create(f"{root}ns1x", obj("ns1x", ""))
    assert [o.name for o in (await suite.storage.list(f"{root}ns1/")).items] == ["a"]


@case
async def list_resource_version_is_the_read_revision(suite: Suite) -> None:
    root = suite.prefix()
    revisions = await _fill(suite, root, 3)
    result = await suite.storage.list(root)
    assert result.resource_version >= revisions[-1]
    assert [o.resource_version for o in result.items] == revisions


@case
async def list_with_limit_pages_through_every_item_once(suite: Suite) -> None:
    root = suite.prefix()
    await _fill(suite, root, 7)
    seen: list[str] = []
    token, pages = "", 0
    while True:
        page = await suite.storage.list(root, ListOptions(limit=3, continue_token=token))
        assert len(page.items) <= 3
        seen.extend(o.name for o in page.items)
        pages += 1
        token = page.continue_token
        if not token:
            break
    assert seen == [f"o{i:03d}" for i in range(7)] and pages == 3


@case
async def list_pages_share_one_revision(suite: Suite) -> None:
    root = suite.prefix()
    await _fill(suite, root, 4)
    first = await suite.storage.list(root, ListOptions(limit=2))
    await suite.storage.create(f"{root}ns/zzz", obj("zzz"))
    second = await suite.storage.list(
        root, ListOptions(limit=2, continue_token=first.continue_token)
    )
    assert second.resource_version == first.resource_version


@case
async def list_pages_show_the_snapshot_while_writes_happen(suite: Suite) -> None:
    root = suite.prefix()
    await _fill(suite, root, 10)
    first = await suite.storage.list(root, ListOptions(limit=4))
    snapshot_names = [f"o{i:03d}" for i in range(10)]
    # Writes between pages: deletes, updates and creates on both sides of the cursor.
    await suite.storage.delete(f"{root}ns/o007")
    await suite.storage.delete(f"{root}ns/o001")
    await suite.storage.create(f"{root}ns/o0055", obj("o0055"))
    await suite.storage.create(f"{root}ns/zzz", obj("zzz"))
    current = await suite.storage.get(f"{root}ns/o008")
    await suite.storage.update(
        f"{root}ns/o008", obj("o008", v="new"), expected_resource_version=current.resource_version
    )
    names = [o.name for o in first.items]
    token = first.continue_token
    while token:
        page = await suite.storage.list(root, ListOptions(limit=4, continue_token=token))
        names.extend(o.name for o in page.items)
        for item in page.items:
            if item.name == "o008":
                assert data(item) == {}
        token = page.continue_token
    assert names == snapshot_names


@case
async def list_reports_remaining_item_count(suite: Suite) -> None:
    root = suite.prefix()
    await _fill(suite, root, 5)
    first = await suite.storage.list(root, ListOptions(limit=2))
    assert first.remaining_item_count == 3
    second = await suite.storage.list(
        root, ListOptions(limit=2, continue_token=first.continue_token)
    )
    assert second.remaining_item_count == 1
    last = await suite.storage.list(
        root, ListOptions(limit=2, continue_token=second.continue_token)
    )
    assert last.continue_token == "" and last.remaining_item_count is None


@case
async def list_with_a_limit_above_the_count_has_no_continue(suite: Suite) -> None:
    root = suite.prefix()
    await _fill(suite, root, 3)
    for limit in (3, 50):
        result = await suite.storage.list(root, ListOptions(limit=limit))
        assert len(result.items) == 3 and result.continue_token == ""
        assert result.remaining_item_count is None


@case
async def list_filters_by_label_selector(suite: Suite) -> None:
    root = suite.prefix()
    for name, tier in (("a", "front"), ("b", "back"), ("c", "back"), ("d", "")):
        labels = {"tier": tier} if tier else None
        await suite.storage.create(f"{root}ns/{name}", obj(name, labels=labels))
    back = await suite.storage.list(
        root, ListOptions(predicate=Predicate(label_selector="tier=back"))
    )
    assert [o.name for o in back.items] == ["b", "c"]
    unlabeled = await suite.storage.list(
        root, ListOptions(predicate=Predicate(label_selector="!tier"))
    )
    assert [o.name for o in unlabeled.items] == ["d"]


@case
async def list_filters_by_field_selector(suite: Suite) -> None:
    root = suite.prefix()
    await suite.storage.create(f"{root}ns1/a", obj("a", "ns1"))
    await suite.storage.create(f"{root}ns2/a", obj("a", "ns2"))
    await suite.storage.create(f"{root}ns2/b", obj("b", "ns2"))
    named = await suite.storage.list(
        root, ListOptions(predicate=Predicate(field_selector="metadata.name=a"))
    )
    assert [o.namespace for o in named.items] == ["ns1", "ns2"]
    elsewhere = await suite.storage.list(
        root, ListOptions(predicate=Predicate(field_selector="metadata.namespace!=ns1"))
    )
    assert [o.key for o in elsewhere.items] == [f"{root}ns2/a", f"{root}ns2/b"]


OWNED = {"ownerReferences": [{"apiVersion": "v1", "kind": "Thing", "name": "o", "uid": "u"}]}
DELETING = {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["example.com/f"]}
OWNED_OR_DELETING = Predicate(owned_or_deleting=True)


@case
async def list_owned_or_deleting_keeps_what_the_garbage_collector_needs(suite: Suite) -> None:
    root = suite.prefix()
    for name, meta in (("a", {}), ("b", OWNED), ("c", DELETING), ("d", {"ownerReferences": []})):
        await suite.storage.create(f"{root}ns/{name}", obj(name, meta=meta))
    listed = await suite.storage.list(root, ListOptions(predicate=OWNED_OR_DELETING))
    assert [o.name for o in listed.items] == ["b", "c"]
    assert [(o.owned, o.deleting) for o in listed.items] == [(True, False), (False, True)]
    first = await suite.storage.list(root, ListOptions(limit=1, predicate=OWNED_OR_DELETING))
    assert [o.name for o in first.items] == ["b"]
    rest = await suite.storage.list(
        root,
        ListOptions(limit=1, continue_token=first.continue_token, predicate=OWNED_OR_DELETING),
    )
    assert [o.name for o in rest.items] == ["c"]


@case
async def watch_owned_or_deleting_follows_objects_into_and_out_of_it(suite: Suite) -> None:
    inside = obj("a", meta={**OWNED, **DELETING})
    seen = await _followed_into_and_out_of(
        suite, OWNED_OR_DELETING, obj("a"), obj("a", meta=OWNED), inside
    )
    assert (seen[1].object.owned, seen[1].object.deleting) == (True, True)


@case
async def list_with_selector_and_limit_returns_at_most_limit_per_page(suite: Suite) -> None:
    root = suite.prefix()
    for i in range(20):
        labels = {"even": "yes"} if i % 2 == 0 else None
        await suite.storage.create(f"{root}ns/o{i:03d}", obj(f"o{i:03d}", labels=labels))
    options = ListOptions(limit=3, predicate=Predicate(label_selector="even=yes"))
    names: list[str] = []
    token = ""
    while True:
        page = await suite.storage.list(
            root, ListOptions(limit=3, continue_token=token, predicate=options.predicate)
        )
        assert len(page.items) <= 3
        assert page.remaining_item_count is None  # unknown when filtering
        names.extend(o.name for o in page.items)
        token = page.continue_token
        if not token:
            break
    assert names == [f"o{i:03d}" for i in range(0, 20, 2)]


@case
async def list_exact_reads_an_old_snapshot(suite: Suite) -> None:
    root = suite.prefix()
    revisions = await _fill(suite, root, 3)
    await suite.storage.delete(f"{root}ns/o000")
    await suite.storage.create(f"{root}ns/o999", obj("o999"))
    old = await suite.storage.list(
        root, ListOptions(resource_version=str(revisions[-1]), resource_version_match=EXACT)
    )
    assert [o.name for o in old.items] == ["o000", "o001", "o002"]
    assert old.resource_version == revisions[-1]


@case
async def list_exact_at_a_compacted_revision_is_expired(suite: Suite) -> None:
    root = suite.prefix()
    revisions = await _fill(suite, root, 2)
    await suite.storage.delete(f"{root}ns/o000")
    await suite.hooks.compact(await suite.hooks.current_revision())
    await raises(
        Expired,
        suite.storage.list(
            root, ListOptions(resource_version=str(revisions[0]), resource_version_match=EXACT)
        ),
    )


@case
async def list_continued_after_compaction_expires_with_an_inconsistent_token(
    suite: Suite,
) -> None:
    root = suite.prefix()
    await _fill(suite, root, 6)
    first = await suite.storage.list(root, ListOptions(limit=2))
    await suite.storage.delete(f"{root}ns/o004")
    await suite.hooks.compact(await suite.hooks.current_revision())
    error = await raises(
        Expired, suite.storage.list(root, ListOptions(limit=2, continue_token=first.continue_token))
    )
    assert isinstance(error, Expired) and error.continue_token
    assert "too old to display a consistent list result" in error.message
    rest = await suite.storage.list(root, ListOptions(continue_token=error.continue_token))
    assert [o.name for o in rest.items] == ["o002", "o003", "o005"]
    assert rest.resource_version > first.resource_version


@case
async def list_with_a_tampered_continue_token_is_invalid_request(suite: Suite) -> None:
    root = suite.prefix()
    await _fill(suite, root, 4)
    token = (await suite.storage.list(root, ListOptions(limit=2))).continue_token
    body = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))

    def reencode(changed: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(orjson.dumps(changed)).decode().rstrip("=")

    tampered = [
        token[:-3],
        token + "x",
        "not a token!",
        reencode({**body, "rv": 0}),
        reencode({**body, "rv": str(body["rv"])}),
        reencode({**body, "start": "../../other/"}),
        reencode({**body, "start": "ns//o003"}),
        reencode({**body, "v": "v2"}),
        reencode({k: v for k, v in body.items() if k != "start"}),
    ]
    for bad in tampered:
        error = await raises(
            InvalidRequest, suite.storage.list(root, ListOptions(limit=2, continue_token=bad))
        )
        assert str(error).startswith("invalid continue token: continue key is not valid: ")
    # As kube's: a well-formed token lists from the key it names, whoever made it.
    edited = reencode({**body, "start": "/ns/o002\x00"})
    rest = await suite.storage.list(root, ListOptions(continue_token=edited))
    assert [o.name for o in rest.items] == ["o003"]


@case
async def list_with_malformed_options_is_invalid_request(suite: Suite) -> None:
    root = suite.prefix()
    await _fill(suite, root, 2)
    token = (await suite.storage.list(root, ListOptions(limit=1))).continue_token
    for options in (
        ListOptions(limit=-1),
        ListOptions(resource_version="twelve"),
        ListOptions(resource_version="5", resource_version_match="Roughly"),
        ListOptions(resource_version="0", resource_version_match=EXACT),
        ListOptions(resource_version_match=NOT_OLDER_THAN),
        ListOptions(resource_version="3", continue_token=token),
        ListOptions(predicate=Predicate(label_selector="a in (b")),
        ListOptions(predicate=Predicate(field_selector="spec.unknown=1")),
    ):
        await raises(InvalidRequest, suite.storage.list(root, options))


@case
async def list_not_older_than_a_future_revision_is_too_large(suite: Suite) -> None:
    future = await suite.hooks.current_revision() + 1000
    await raises(
        TooLargeResourceVersion,
        suite.storage.list(
            suite.prefix(),
            ListOptions(resource_version=str(future), resource_version_match=NOT_OLDER_THAN),
        ),
    )


@case
async def list_at_resource_version_zero_honours_limit(suite: Suite) -> None:
    root = suite.prefix()
    await _fill(suite, root, 3)

    async def paged() -> None:
        page = await suite.storage.list(root, ListOptions(resource_version="0", limit=2))
        assert [o.name for o in page.items] == ["o000", "o001"] and page.continue_token
        rest = await suite.storage.list(root, ListOptions(continue_token=page.continue_token))
        assert [o.name for o in rest.items] == ["o002"] and not rest.continue_token
        assert rest.resource_version == page.resource_version

    await eventually(paged)


@case
async def list_at_resource_version_zero_returns_every_item(suite: Suite) -> None:
    root = suite.prefix()
    await _fill(suite, root, 3)

    async def complete() -> None:
        result = await suite.storage.list(root, ListOptions(resource_version="0"))
        assert [o.name for o in result.items] == ["o000", "o001", "o002"]

    await eventually(complete)


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


# --- watch ------------------------------------------------------------------------


@case
async def watch_from_a_revision_sees_every_later_change_once_in_order(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.storage.create(f"{root}ns/before", obj("before"))
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(start.resource_version)))
    a = await suite.storage.create(f"{root}ns/a", obj("a", v="1"))
    b = await suite.storage.update(
        f"{root}ns/a", obj("a", v="2"), expected_resource_version=a.resource_version
    )
    c = await suite.storage.delete(f"{root}ns/a")
    seen = await events(stream, 3)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert [e.type for e in seen] == [Event.ADDED, Event.MODIFIED, Event.DELETED]
    assert [e.resource_version for e in seen] == [
        a.resource_version,
        b.resource_version,
        c.resource_version,
    ]


@case
async def watch_from_zero_starts_with_the_current_state(suite: Suite) -> None:
    for rv in ("0", ""):
        root = suite.prefix()
        await suite.storage.create(f"{root}ns/a", obj("a"))
        await suite.storage.create(f"{root}ns/b", obj("b"))
        stream = suite.storage.watch(root, WatchOptions(resource_version=rv))
        initial = await events(stream, 2)
        assert {(e.type, e.object.name) for e in initial} == {
            (Event.ADDED, "a"),
            (Event.ADDED, "b"),
        }
        created = await suite.storage.create(f"{root}ns/c", obj("c"))
        (live,) = await events(stream, 1)
        assert (live.type, live.resource_version) == (Event.ADDED, created.resource_version)
        await stream.aclose()


async def _initial_events(
    stream: AsyncGenerator[Event, None], within: float = 10
) -> tuple[list[Event], Event]:
    """The ADDED events of a watch-list, and the BOOKMARK that ends them."""
    added: list[Event] = []
    async with asyncio.timeout(within):
        while True:
            event = await anext(stream)
            if event.type == Event.BOOKMARK and event.initial_events_end:
                return added, event
            assert event.type == Event.ADDED, f"unexpected event before the end: {event}"
            added.append(event)


async def _watch_list(
    suite: Suite, root: str, options: WatchOptions, last: int
) -> AsyncGenerator[Event, None]:
    """A watch-list whose initial events are the objects a and b (up to revision last)."""
    stream = suite.storage.watch(root, options)
    added, end = await _initial_events(stream)
    if [e.object.name for e in added] != ["a", "b"]:  # a cache at "0" may lag
        await stream.aclose()
        raise AssertionError(f"initial events {added}")
    assert end.resource_version >= last
    return stream


@case
async def watch_list_sends_the_state_then_an_initial_events_end_bookmark(suite: Suite) -> None:
    for rv in ("", "0"):
        root = suite.prefix()
        await suite.storage.create(f"{root}ns/a", obj("a"))
        b = await suite.storage.create(f"{root}ns/b", obj("b"))
        options = WatchOptions(resource_version=rv, send_initial_events=True, progress_notify=True)
        # At "0" a cache may answer before it has seen b: it is asked again.
        stream = await eventually(partial(_watch_list, suite, root, options, b.resource_version))
        created = await suite.storage.create(f"{root}ns/c", obj("c"))
        (live,) = await events(stream, 1)
        assert (live.type, live.resource_version) == (Event.ADDED, created.resource_version)
        await stream.aclose()


@case
async def watch_list_with_a_predicate_sends_only_matching_objects(suite: Suite) -> None:
    root = suite.prefix()
    await suite.storage.create(f"{root}ns/a", obj("a", labels={"app": "x"}))
    await suite.storage.create(f"{root}ns/b", obj("b", labels={"app": "y"}))
    stream = suite.storage.watch(
        root,
        WatchOptions(
            send_initial_events=True,
            progress_notify=True,
            predicate=Predicate(label_selector="app=x"),
        ),
    )
    added, _ = await _initial_events(stream)
    await stream.aclose()
    assert [e.object.name for e in added] == ["a"]


@case
async def watch_list_not_older_than_a_revision_starts_at_or_after_it(suite: Suite) -> None:
    root = suite.prefix()
    first = await suite.storage.create(f"{root}ns/a", obj("a"))
    later = await suite.storage.update(
        f"{root}ns/a", obj("a", v="2"), expected_resource_version=first.resource_version
    )
    stream = suite.storage.watch(
        root,
        WatchOptions(
            resource_version=str(later.resource_version),
            send_initial_events=True,
            progress_notify=True,
        ),
    )
    added, end = await _initial_events(stream)
    await stream.aclose()
    assert [(e.object.name, data(e.object)) for e in added] == [("a", {"v": "2"})]
    assert end.resource_version >= later.resource_version


@case
async def watch_list_without_bookmarks_has_no_initial_events_end(suite: Suite) -> None:
    # kube ends a watch-list's state with its BOOKMARK only when bookmarks are allowed.
    root = suite.prefix()
    await suite.storage.create(f"{root}ns/a", obj("a"))
    await suite.storage.list(root, ListOptions())  # a cache is current from here
    stream = suite.storage.watch(root, WatchOptions(resource_version="", send_initial_events=True))
    (initial,) = await events(stream, 1)
    created = await suite.storage.create(f"{root}ns/c", obj("c"))
    got: list[Event] = []
    async with asyncio.timeout(10):
        while not got or got[-1].resource_version != created.resource_version:
            got.append(await anext(stream))
    await stream.aclose()
    assert (initial.type, initial.object.name) == (Event.ADDED, "a")
    assert [(e.type, e.object.name) for e in got] == [(Event.ADDED, "c")]


@case
async def watch_that_declines_initial_events_starts_now(suite: Suite) -> None:
    # sendInitialEvents=false from "" (the current revision) or "0" (any): no state.
    for rv in ("", "0"):
        root = suite.prefix()
        await suite.storage.create(f"{root}ns/a", obj("a"))
        await suite.storage.list(root, ListOptions())  # a cache is current from here
        stream = suite.storage.watch(
            root, WatchOptions(resource_version=rv, send_initial_events=False)
        )
        first = asyncio.ensure_future(anext(stream))
        # Writes until the watch (started by that first read) sees one: a's state
        # would have come before any of them.
        written: dict[int, str] = {}
        async with asyncio.timeout(10):
            while not first.done():
                name = f"b{len(written)}"
                written[
                    (await suite.storage.create(f"{root}ns/{name}", obj(name))).resource_version
                ] = name
                await asyncio.wait([first], timeout=0.1)
        event = first.result()
        await stream.aclose()
        assert event.type == Event.ADDED
        assert written.get(event.resource_version) == event.object.name


@case
async def request_progress_brings_an_idle_watch_a_bookmark_at_once(suite: Suite) -> None:
    suite.require("progress_on_request")
    root, elsewhere = suite.prefix(), suite.prefix()
    start = await suite.storage.create(f"{root}ns/a", obj("a"))
    # Its own progress would come only after a minute.
    options = WatchOptions(
        resource_version=str(start.resource_version),
        progress_notify=True,
        progress_interval_seconds=60,
    )
    stream = suite.storage.watch(root, options)
    first = asyncio.ensure_future(anext(stream))
    later = await suite.storage.create(f"{elsewhere}ns/b", obj("b"))
    async with asyncio.timeout(10):
        while not first.done():  # asked again until the watch (just starting) answers
            await suite.storage.request_progress()
            await asyncio.wait([first], timeout=0.2)
    event = first.result()
    await stream.aclose()
    assert event.type == Event.BOOKMARK
    assert event.resource_version >= later.resource_version


@case
async def watch_of_one_key_ignores_its_neighbours(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.storage.create(f"{root}ns/other", obj("other"))
    stream = suite.storage.watch(
        f"{root}ns/a", WatchOptions(resource_version=str(start.resource_version), recursive=False)
    )
    await suite.storage.create(f"{root}ns/ab", obj("ab"))
    created = await suite.storage.create(f"{root}ns/a", obj("a"))
    (event,) = await events(stream, 1)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert event.object.key == f"{root}ns/a" and event.resource_version == created.resource_version


@case
async def watch_deleted_event_carries_the_last_state(suite: Suite) -> None:
    root = await suite.resource()
    created = await suite.storage.create(f"{root}ns/a", obj("a", v="last"))
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(created.resource_version)))
    deleted = await suite.storage.delete(f"{root}ns/a")
    (event,) = await events(stream, 1)
    await stream.aclose()
    assert event.type == Event.DELETED and data(event.object) == {"v": "last"}
    assert event.resource_version == deleted.resource_version
    assert orjson.loads(event.object.value)["metadata"]["resourceVersion"] == str(
        deleted.resource_version
    )


async def _followed_into_and_out_of(
    suite: Suite, predicate: Predicate, outside: bytes, inside: bytes, inside_changed: bytes
) -> list[Event]:
    """What a watch with predicate sees of one object created outside it, moved
    inside, changed inside, moved outside and deleted: ADDED, MODIFIED and
    DELETED at the revisions of the three updates, and nothing else."""
    root = await suite.resource()
    key = f"{root}ns/a"
    start = await suite.storage.create(f"{root}ns/anchor", obj("anchor"))
    stream = suite.storage.watch(
        root, WatchOptions(resource_version=str(start.resource_version), predicate=predicate)
    )
    revision = (await suite.storage.create(key, outside)).resource_version
    revisions = []
    for body in (inside, inside_changed, outside):
        updated = await suite.storage.update(key, body, expected_resource_version=revision)
        revision = updated.resource_version
        revisions.append(revision)
    await suite.storage.delete(key)  # no longer matching: not seen
    seen = await events(stream, 3)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert [(e.type, e.resource_version) for e in seen] == list(
        zip((Event.ADDED, Event.MODIFIED, Event.DELETED), revisions, strict=True)
    )
    return seen


@case
async def watch_with_a_predicate_follows_objects_into_and_out_of_it(suite: Suite) -> None:
    seen = await _followed_into_and_out_of(
        suite,
        Predicate(label_selector="app=web"),
        obj("a", labels={"app": "db"}),
        obj("a", labels={"app": "web"}),
        obj("a", labels={"app": "web"}, k="v"),
    )
    # The DELETED event shows the last state that matched, at the revision it stopped.
    body = orjson.loads(seen[2].object.value)
    assert body["metadata"]["labels"] == {"app": "web"}
    assert body["metadata"]["resourceVersion"] == str(seen[2].resource_version)


@case
async def watch_with_a_field_selector_sees_only_that_name(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.storage.create(f"{root}ns/anchor", obj("anchor"))
    stream = suite.storage.watch(
        root,
        WatchOptions(
            resource_version=str(start.resource_version),
            predicate=Predicate(field_selector="metadata.name=b"),
        ),
    )
    await suite.storage.create(f"{root}ns/a", obj("a"))
    b = await suite.storage.create(f"{root}ns/b", obj("b"))
    (event,) = await events(stream, 1)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert event.object.name == "b" and event.resource_version == b.resource_version


@case
async def watch_from_zero_with_a_predicate_starts_with_matching_objects(suite: Suite) -> None:
    root = suite.prefix()
    await suite.storage.create(f"{root}ns/a", obj("a", labels={"keep": "1"}))
    await suite.storage.create(f"{root}ns/b", obj("b"))
    stream = suite.storage.watch(
        root, WatchOptions(resource_version="0", predicate=Predicate(label_selector="keep"))
    )
    (first,) = await events(stream, 1)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert (first.type, first.object.name) == (Event.ADDED, "a")


@case
async def watch_from_a_compacted_revision_is_expired(suite: Suite) -> None:
    suite.require("watch_expires_on_compaction")
    root = suite.prefix()
    old = await suite.storage.create(f"{root}ns/a", obj("a"))
    await suite.storage.update(
        f"{root}ns/a", obj("a", v="2"), expected_resource_version=old.resource_version
    )
    await suite.hooks.compact(await suite.hooks.current_revision())
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(old.resource_version - 1)))
    await raises(Expired, events(stream, 1))


async def _too_old(suite: Suite, root: str, since: int) -> int:
    """The OLDEST of the Expired "too old resource version: since (OLDEST)" that
    a watch from since ends with."""
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(since)))
    error = await raises(Expired, events(stream, 1))
    assert isinstance(error, Expired)
    named = re.fullmatch(rf"too old resource version: {since} \((\d+)\)", error.message)
    assert named is not None, error.message
    return int(named[1])


@case
async def watch_from_before_the_window_is_expired_though_storage_has_it(suite: Suite) -> None:
    # kube's cacher: 410 "too old resource version: N (OLDEST)" for a watch from
    # before its window, whatever etcd still keeps; from OLDEST on it is served.
    suite.require("expires_before_window")
    root = await suite.resource()
    a = await suite.storage.create(f"{root}ns/a", obj("a"))  # revision 1 is behind us
    oldest = await _too_old(suite, root, 1)
    assert 1 < oldest <= await suite.hooks.current_revision()
    assert await _too_old(suite, root, oldest - 1) == oldest
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(oldest)))
    b = await suite.storage.create(f"{root}ns/b", obj("b"))
    wanted = [o.resource_version for o in (a, b) if o.resource_version > oldest]
    seen = await events(stream, len(wanted))
    await stream.aclose()
    assert [e.resource_version for e in seen] == wanted


@case
async def watch_from_a_revision_not_reached_yet_waits_for_it(suite: Suite) -> None:
    # kube: a watch from a future resourceVersion is accepted and sees what
    # comes after it (only a watch-list answers "Too large resource version").
    root = await suite.resource()
    future = await suite.hooks.current_revision() + 2
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(future)))
    first = asyncio.ensure_future(anext(stream))
    written = [
        (await suite.storage.create(f"{root}ns/o{i}", obj(f"o{i}"))).resource_version
        for i in range(3)
    ]
    assert written[-1] > future
    (event,) = await events(_starting_with(first, stream), 1)
    await stream.aclose()
    assert event.resource_version == min(r for r in written if r > future)


async def _starting_with(
    first: asyncio.Future[Event], rest: AsyncGenerator[Event, None]
) -> AsyncGenerator[Event, None]:
    yield await first
    async for event in rest:
        yield event


@case
async def watch_with_a_malformed_revision_is_invalid_request(suite: Suite) -> None:
    stream = suite.storage.watch(suite.prefix(), WatchOptions(resource_version="soon"))
    await raises(InvalidRequest, events(stream, 1))
    stream = suite.storage.watch(
        suite.prefix(), WatchOptions(predicate=Predicate(label_selector="==="))
    )
    await raises(InvalidRequest, events(stream, 1))


@case
async def watch_order_holds_under_concurrent_writers(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.hooks.current_revision()
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(start)))
    writers, per_writer = 8, 10

    async def writer(w: int) -> list[int]:
        revisions = []
        for i in range(per_writer):
            created = await suite.storage.create(f"{root}ns/w{w}-{i}", obj(f"w{w}-{i}"))
            revisions.append(created.resource_version)
        return revisions

    written = sorted(
        r for rs in await asyncio.gather(*(writer(w) for w in range(writers))) for r in rs
    )
    seen = await events(stream, writers * per_writer, within=30)
    await quiet(stream, 0.3)
    await stream.aclose()
    assert [e.resource_version for e in seen] == written


@case
async def two_watchers_see_the_same_events(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.storage.create(f"{root}ns/anchor", obj("anchor"))
    options = WatchOptions(resource_version=str(start.resource_version))
    first, second = suite.storage.watch(root, options), suite.storage.watch(root, options)
    for i in range(5):
        await suite.storage.create(f"{root}ns/o{i}", obj(f"o{i}"))
    a, b = await events(first, 5), await events(second, 5)
    await first.aclose()
    await second.aclose()
    assert [(e.type, e.resource_version) for e in a] == [(e.type, e.resource_version) for e in b]


@case
async def watch_sees_a_ttl_expiry_as_deleted(suite: Suite) -> None:
    root = await suite.resource()
    start = await suite.storage.create(f"{root}ns/anchor", obj("anchor"))
    stream = suite.storage.watch(root, WatchOptions(resource_version=str(start.resource_version)))
    await suite.storage.create(f"{root}ns/short", obj("short"), ttl_seconds=1)
    added, deleted = await events(stream, 2, within=15)
    await stream.aclose()
    assert (added.type, deleted.type) == (Event.ADDED, Event.DELETED)
    assert deleted.object.name == "short"


@case
async def watch_with_progress_notify_sends_bookmarks_while_idle(suite: Suite) -> None:
    suite.require("progress_notify")
    root = suite.prefix()
    created = await suite.storage.create(f"{root}ns/a", obj("a"))
    stream = suite.storage.watch(
        root,
        WatchOptions(resource_version=str(created.resource_version), progress_notify=True),
    )
    try:
        async with asyncio.timeout(15):
            while (event := await anext(stream)).type != Event.BOOKMARK:
                raise AssertionError(f"unexpected event {event}")
    finally:
        await stream.aclose()
    assert event.resource_version >= created.resource_version
    assert not event.HasField("object") or event.object.value == b""


# --- count, revisions, compaction -------------------------------------------------


@case
async def count_counts_the_objects_under_a_prefix(suite: Suite) -> None:
    root = suite.prefix()
    await _fill(suite, root, 3, "ns1")
    await _fill(suite, root, 2, "ns2")
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
    await _fill(suite, root, 3)
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
