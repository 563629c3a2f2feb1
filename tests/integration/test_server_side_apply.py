"""Server-side apply sequences through the real gateway and services, each
step's object and managedFields compared with what kube-apiserver v1.36
answered to the same sequence (tests/support/apply_cases.py says how they were
recorded). Apply's own rules are checked against the same answers in
tests/unit/test_apply_sequences.py; here the registry's part counts too: a
built-in kind's object as kube's Go types make it (services/registry/generic/typed.py:
empty maps and lists left out, a null map value its zero), a LabelSelector
owned whole."""

from __future__ import annotations

import aiohttp
import pytest

from tests.support.apply_cases import CASES, recorded, run

KUBE = recorded()


def test_every_case_has_kubes_answer() -> None:
    assert set(KUBE) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
async def test_apply_sequence_matches_kube(http: aiohttp.ClientSession, name: str) -> None:
    answers = await run(http, CASES[name])
    for step, (got, expected) in enumerate(zip(answers, KUBE[name], strict=True)):
        assert (step, got) == (step, expected)


async def test_the_issues_sequence_keeps_the_last_applied_data(
    http: aiohttp.ClientSession,
) -> None:
    """Issue 27 item 10: data {k1: v1}, then {}, then {k2: v2} left data absent
    while managedFields claimed f:data.f:k2."""
    answers = await run(http, CASES["empty-map-then-key"])
    assert [a["object"]["data"] for a in answers] == [{"k1": "v1"}, "<absent>", {"k2": "v2"}]
    assert answers[-1]["managedFields"] == [["a", "Apply", True, {"f:data": {"f:k2": {}}}]]
    assert answers == KUBE["empty-map-then-key"]
