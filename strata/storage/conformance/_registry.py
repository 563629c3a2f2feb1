"""How a conformance case is registered: each area's module collects its cases
in a `Cases` in the order they are written, and `_cases.py` joins the areas
into the one CASES the suite exports."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from strata.storage.conformance._suite import Suite

Case = Callable[[Suite], Awaitable[None]]


class Cases(dict[str, Case]):
    """One area's cases by name, in the order they were registered."""

    def case(self, fn: Case) -> Case:
        """Register fn under its name (a decorator)."""
        self[fn.__name__] = fn
        return fn
