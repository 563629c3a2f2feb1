"""A review's body with a field of another JSON type than its Go field's is
kube's 400, in Go's words (a metadata of 1 was a 500 that tests/fuzz found,
an extra of ["x", 1] another). The expected words are kube v1.36.2's."""

from __future__ import annotations

import json
from typing import cast

import pytest
from aiohttp import web

from services.gateway.handlers.review_bodies import review_body
from strata.api.errors import StatusError

SAR = "SubjectAccessReview"
ATTRIBUTES = {"verb": "get", "resource": "configmaps", "namespace": "default"}


class _Posted:
    """What review_body reads of a request: its Content-Type and its body."""

    def __init__(self, body: object) -> None:
        self.headers = {"Content-Type": "application/json"}
        self._body = json.dumps(body).encode()

    async def read(self) -> bytes:
        return self._body


def _unmarshal(kind: str, detail: str) -> str:
    return f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal {detail}'


CASES = [
    (
        SAR,
        {"metadata": 1},
        "number into Go struct field SubjectAccessReview.metadata of type v1.ObjectMeta",
    ),
    (
        "LocalSubjectAccessReview",
        {"metadata": "x"},
        "string into Go struct field LocalSubjectAccessReview.metadata of type v1.ObjectMeta",
    ),
    (
        "SelfSubjectAccessReview",
        {"metadata": {"namespace": 1}},
        "number into Go struct field ObjectMeta.metadata.namespace of type string",
    ),
    (
        SAR,
        {"spec": 1},
        "number into Go struct field SubjectAccessReview.spec of type v1.SubjectAccessReviewSpec",
    ),
    (
        SAR,
        {"spec": {"user": 1}},
        "number into Go struct field SubjectAccessReviewSpec.spec.user of type string",
    ),
    (
        SAR,
        {"spec": {"groups": "x"}},
        "string into Go struct field SubjectAccessReviewSpec.spec.groups of type []string",
    ),
    (
        SAR,
        {"spec": {"groups": [1]}},
        "number into Go struct field SubjectAccessReviewSpec.spec.groups of type string",
    ),
    (
        SAR,
        {"spec": {"extra": {"k": "x"}}},
        "string into Go struct field SubjectAccessReviewSpec.spec.extra of type v1.ExtraValue",
    ),
    (
        SAR,
        {"spec": {"extra": {"k": [1]}}},
        "number into Go struct field SubjectAccessReviewSpec.spec.extra of type string",
    ),
    (
        SAR,
        {"spec": {"extra": 1}},
        "number into Go struct field SubjectAccessReviewSpec.spec.extra "
        "of type map[string]v1.ExtraValue",
    ),
    (
        SAR,
        {"spec": {"resourceAttributes": {"verb": 1}}},
        "number into Go struct field ResourceAttributes.spec.resourceAttributes.verb "
        "of type string",
    ),
    (
        SAR,
        {"spec": {"nonResourceAttributes": []}},
        "array into Go struct field SubjectAccessReviewSpec.spec.nonResourceAttributes "
        "of type v1.NonResourceAttributes",
    ),
    (
        SAR,
        {"status": 1},
        "number into Go struct field SubjectAccessReview.status "
        "of type v1.SubjectAccessReviewStatus",
    ),
    (
        "SelfSubjectRulesReview",
        {"spec": {"namespace": 1}},
        "number into Go struct field SelfSubjectRulesReviewSpec.spec.namespace of type string",
    ),
    (
        "TokenReview",
        {"spec": {"token": "x", "audiences": "a"}},
        "string into Go struct field TokenReviewSpec.spec.audiences of type []string",
    ),
]


@pytest.mark.parametrize(("kind", "body", "detail"), CASES)
async def test_a_field_of_another_type_is_kube_s_400(kind: str, body: object, detail: str) -> None:
    group = "authentication" if kind == "TokenReview" else "authorization"
    request = cast(web.Request, _Posted(body))
    with pytest.raises(StatusError) as refused:
        await review_body(request, f"{group}.k8s.io/v1", kind, group)
    assert (refused.value.code, refused.value.message) == (400, _unmarshal(kind, detail))


async def test_a_review_of_the_right_types_is_read() -> None:
    body = {"spec": {"resourceAttributes": ATTRIBUTES, "user": "a", "extra": {"k": ["v"]}}}
    request = cast(web.Request, _Posted(body))
    assert await review_body(request, "authorization.k8s.io/v1", SAR, "authorization") == body
