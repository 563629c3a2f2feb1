"""A Scale body whose spec, status or metadata is of another JSON type is
refused as kube's decoder refuses it (400, its words; a spec of true was a
500 that tests/fuzz found). The expected words are kube v1.36.2's, for
PUT /apis/apps/v1/namespaces/default/deployments/d1/scale."""

from __future__ import annotations

import json

import pytest

from services.registry.builtin.apps import DEPLOYMENTS
from services.registry.generic.scale import decode_scale
from strata.api.errors import StatusError

KUBE = 'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"spec": True}, "bool into Go struct field Scale.spec of type v1.ScaleSpec"),
        ({"spec": []}, "array into Go struct field Scale.spec of type v1.ScaleSpec"),
        ({"status": True}, "bool into Go struct field Scale.status of type v1.ScaleStatus"),
        ({"metadata": True}, "bool into Go struct field Scale.metadata of type v1.ObjectMeta"),
        (
            {"metadata": {"name": "d1"}, "status": {"replicas": "x"}},
            "string into Go struct field ScaleStatus.status.replicas of type int32",
        ),
        (
            {"metadata": {"name": "d1"}, "status": {"selector": 1}},
            "number into Go struct field ScaleStatus.status.selector of type string",
        ),
    ],
)
def test_a_scale_of_the_wrong_shape_is_kube_s_400(body: object, message: str) -> None:
    with pytest.raises(StatusError) as refused:
        decode_scale(DEPLOYMENTS, json.dumps(body).encode(), "default", "d1")
    assert (refused.value.code, refused.value.message) == (400, KUBE + message)


def test_a_scale_of_the_right_shape_is_read() -> None:
    body = {"metadata": {"name": "d1", "resourceVersion": "7"}, "spec": {"replicas": 3}}
    assert decode_scale(DEPLOYMENTS, json.dumps(body).encode(), "default", "d1") == (3, "7")
