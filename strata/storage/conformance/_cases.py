"""The conformance cases, gathered: CASES maps each case's name to its
function, area by area in the order the areas' modules list them (create and
get, list, update and delete, watch, revisions and counts, then writes that
carry their envelope). Each case is `async def name(suite) -> None`, asserting
with plain `assert`, and lives in its area's module, registered there by that
module's @case decorator."""

from __future__ import annotations

from strata.storage.conformance import (
    _create_get_cases,
    _envelope_cases,
    _list_cases,
    _revision_and_count_cases,
    _update_delete_cases,
    _watch_cases,
)
from strata.storage.conformance._registry import Case, Cases


def _gathered(*areas: Cases) -> dict[str, Case]:
    """The areas' cases in order; a name in two areas would hide one of them."""
    gathered: dict[str, Case] = {}
    for area in areas:
        if twice := gathered.keys() & area.keys():
            raise ValueError(f"conformance cases named twice: {sorted(twice)}")
        gathered.update(area)
    return gathered


CASES = _gathered(
    _create_get_cases.CASES,
    _list_cases.CASES,
    _update_delete_cases.CASES,
    _watch_cases.CASES,
    _revision_and_count_cases.CASES,
    _envelope_cases.CASES,
)

__all__ = ["CASES", "Case"]
