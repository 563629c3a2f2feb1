"""Which requests the cache answers, and how fresh it must be first: a pure
function of the request, unit-tested on its own (kube's cacher makes the same
choice)."""

from __future__ import annotations

from enum import Enum

from strata.storage import EXACT


class Op(Enum):
    GET = "get"
    LIST = "list"
    WATCH = "watch"


class Plan(Enum):
    # The cache as it is: any state will do (resourceVersion "0").
    CACHE = "cache"
    # The cache once it has reached storage's current revision (a consistent read,
    # resourceVersion ""); storage answers if the cache does not get there in time.
    CACHE_CURRENT = "cache-current"
    # The cache once it has reached the given revision (not older than N); 504
    # "Too large resource version" if it does not get there in time.
    CACHE_NOT_OLDER = "cache-not-older"
    # Storage: an Exact revision, or the next page of a list.
    STORAGE = "storage"


def plan(
    op: Op,
    resource_version: str,
    *,
    match: str = "",
    continuing: bool = False,
    send_initial_events: bool | None = None,
) -> Plan:
    """Where a read is answered from.

    Watches always come from the cache (it replays from its window or says 410);
    one at "" that gives sendInitialEvents (true or false) starts from the
    current revision, so the cache is first made current, like a consistent list.
    Reads at "0" take the cache as it is; at "" or N the cache answers once fresh
    enough. An Exact read and every continued list go to storage, which holds
    older revisions than the cache's current one.
    """
    if op is Op.WATCH:
        if send_initial_events is not None and resource_version == "":
            return Plan.CACHE_CURRENT
        if send_initial_events and resource_version not in ("", "0"):
            return Plan.CACHE_NOT_OLDER
        return Plan.CACHE
    if continuing or match == EXACT:
        return Plan.STORAGE
    if resource_version == "0":
        return Plan.CACHE
    if resource_version == "":
        return Plan.CACHE_CURRENT
    return Plan.CACHE_NOT_OLDER
