"""Steps that cases of more than one area take: filling a prefix with objects
(list and count cases), and following one object into and out of a watch's
predicate (watch cases, and the garbage collector's predicate among the list
cases). Kept apart so no area's module imports another's."""

from __future__ import annotations

from strata.storage._interface import Predicate, WatchOptions
from strata.storage.conformance._suite import Event, Suite, events, obj, quiet


async def fill(suite: Suite, root: str, count: int, namespace: str = "ns") -> list[int]:
    revisions = []
    for i in range(count):
        created = await suite.storage.create(
            f"{root}{namespace}/o{i:03d}", obj(f"o{i:03d}", namespace)
        )
        revisions.append(created.resource_version)
    return revisions


async def followed_into_and_out_of(
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
