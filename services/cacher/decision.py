"""Which requests the cache answers and which go to storage: a pure function of
the request, unit-tested on its own (kube's cacher makes the same choice)."""

from __future__ import annotations

from enum import Enum

from strata.storage import EXACT


class Op(Enum):
    GET = "get"
    LIST = "list"
    WATCH = "watch"


def served_from_cache(
    op: Op, resource_version: str, *, match: str = "", continuing: bool = False
) -> bool:
    """True when the cache may answer.

    Watches always come from the cache (it replays from its window or says 410).
    Reads at resourceVersion "0" accept any state, so the cache answers (a limit
    is then ignored, as kube's cacher does); a consistent read (""), one at a
    given revision, an Exact one and every continued list go to storage until
    the cacher can prove freshness and page (a later issue).
    """
    if op is Op.WATCH:
        return True
    if continuing or match == EXACT:
        return False
    return resource_version == "0"
