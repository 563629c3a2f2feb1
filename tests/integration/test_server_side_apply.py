"""Server-side apply sequences through the real gateway and services, each
step's object and managedFields compared with what kube-apiserver v1.36
answered to the same sequence (tests/support/apply_cases.py says how they were
recorded). Apply's own rules are checked against the same answers in
tests/unit/test_apply_sequences.py; the cases marked here differ from kube in
what the registry does with a built-in kind's object after apply merged it."""

from __future__ import annotations

import aiohttp
import pytest

from tests.support.apply_cases import CASES, recorded, run

KUBE = recorded()

# kube's Go types leave a built-in kind's empty maps and lists out of the
# object; the registry keeps them (so `data: {}` stays, and a manager owning
# the empty map does not conflict with a key applied into it).
_EMPTY_KEPT = "services/registry keeps a built-in kind's empty maps and lists; kube omits them"
# kube's Go types take a null map value as its type's zero ("").
_NULL_REFUSED = "services/registry refuses a null map value (400); kube makes it the zero value"
# kube's LabelSelector is an atomic map (f:selector: {}).
_SELECTOR = "services/registry/kind_schemas.py LABEL_SELECTOR lacks x-kubernetes-map-type: atomic"
# replicas: null is the default (1) in kube; the selector above differs too.
_REGISTRY_GAPS = {
    "empty-map-then-key": _EMPTY_KEPT,
    "empty-map-first": _EMPTY_KEPT,
    "empty-map-over-anothers-keys": _EMPTY_KEPT,
    "empty-map-owned-then-key-by-another": _EMPTY_KEPT,
    "map-set-to-null": _EMPTY_KEPT,
    "labels-empty-then-label": _EMPTY_KEPT,
    "two-managers-one-empties": _EMPTY_KEPT,
    "two-managers-share-a-key": _EMPTY_KEPT,
    "key-set-to-null": _NULL_REFUSED,
    "label-set-to-null": _NULL_REFUSED,
    "containers-empty-and-back": _SELECTOR,
    "container-ports-empty-and-back": _SELECTOR,
    "container-args-empty-and-back": _SELECTOR,
    "replicas-set-to-null": _SELECTOR,
}


def test_every_case_has_kubes_answer() -> None:
    assert set(KUBE) == set(CASES)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(
            name,
            marks=[pytest.mark.xfail(reason=_REGISTRY_GAPS[name], strict=True)]
            if name in _REGISTRY_GAPS
            else [],
        )
        for name in sorted(CASES)
    ],
)
async def test_apply_sequence_matches_kube(http: aiohttp.ClientSession, name: str) -> None:
    answers = await run(http, CASES[name])
    for step, (got, expected) in enumerate(zip(answers, KUBE[name], strict=True)):
        assert (step, got) == (step, expected)


async def test_the_issues_sequence_keeps_the_last_applied_data(
    http: aiohttp.ClientSession,
) -> None:
    """Issue 27 item 10: data {k1: v1}, then {}, then {k2: v2} left data absent
    while managedFields claimed f:data.f:k2."""
    first, emptied, last = await run(http, CASES["empty-map-then-key"])
    kube_first, kube_emptied, kube_last = KUBE["empty-map-then-key"]
    assert first == kube_first and last == kube_last
    assert emptied["managedFields"] == kube_emptied["managedFields"]
    # kube leaves the empty map out; the registry keeps it (_EMPTY_KEPT).
    assert emptied["object"]["data"] in ({}, kube_emptied["object"]["data"])
