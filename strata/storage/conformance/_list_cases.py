"""Conformance cases for list: key order and prefixes, pages and continue
tokens (their snapshot, compaction, tampering), selectors, the garbage
collector's owned-or-deleting predicate (its list and its watch, kept side by
side), resourceVersion matches and malformed options. One of the areas
`_cases.py` gathers into CASES; split out so each area reads on its own."""

from __future__ import annotations

import base64

import orjson

from strata.storage._errors import Expired, InvalidRequest, TooLargeResourceVersion
from strata.storage._interface import EXACT, NOT_OLDER_THAN, ListOptions, Predicate
from strata.storage.conformance._registry import Cases
from strata.storage.conformance._steps import fill, followed_into_and_out_of
from strata.storage.conformance._suite import Suite, data, eventually, obj, raises

CASES = Cases()
case = CASES.case


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
    revisions = await fill(suite, root, 3)
    result = await suite.storage.list(root)
    assert result.resource_version >= revisions[-1]
    assert [o.resource_version for o in result.items] == revisions


@case
async def list_with_limit_pages_through_every_item_once(suite: Suite) -> None:
    root = suite.prefix()
    await fill(suite, root, 7)
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
    await fill(suite, root, 4)
    first = await suite.storage.list(root, ListOptions(limit=2))
    await suite.storage.create(f"{root}ns/zzz", obj("zzz"))
    second = await suite.storage.list(
        root, ListOptions(limit=2, continue_token=first.continue_token)
    )
    assert second.resource_version == first.resource_version


@case
async def list_pages_show_the_snapshot_while_writes_happen(suite: Suite) -> None:
    root = suite.prefix()
    await fill(suite, root, 10)
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
    await fill(suite, root, 5)
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
    await fill(suite, root, 3)
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
    seen = await followed_into_and_out_of(
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
    revisions = await fill(suite, root, 3)
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
    revisions = await fill(suite, root, 2)
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
    await fill(suite, root, 6)
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
    await fill(suite, root, 4)
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
    await fill(suite, root, 2)
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
    await fill(suite, root, 3)

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
    await fill(suite, root, 3)

    async def complete() -> None:
        result = await suite.storage.list(root, ListOptions(resource_version="0"))
        assert [o.name for o in result.items] == ["o000", "o001", "o002"]

    await eventually(complete)
