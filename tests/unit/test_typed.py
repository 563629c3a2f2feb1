"""What kube's decoder makes of a built-in kind's JSON (services/registry/typed.py):
nulls as Go takes them, and the first value of the wrong type a 400."""

from __future__ import annotations

from typing import Any

import pytest

from services.registry import kind_schemas, typed
from strata.api.errors import StatusError
from strata.api.schemas import OBJECT_META

SCHEMA: dict[str, Any] = {
    **kind_schemas.SERVICE,
    "properties": {**kind_schemas.SERVICE["properties"], "metadata": OBJECT_META},
}


def test_nulls_are_left_out_or_zero() -> None:
    obj: dict[str, Any] = {
        "metadata": {"name": "s", "finalizers": [None, "a"], "labels": None},
        "spec": {"ports": [None, {"port": 80, "name": None}], "clusterIP": None},
    }
    assert typed.decoded(obj, SCHEMA) is None
    assert obj == {
        "metadata": {"name": "s", "finalizers": ["", "a"]},
        "spec": {"ports": [{}, {"port": 80}]},
    }


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        ({"spec": {"ports": True}}, "spec.ports: expected array, got bool"),
        ({"spec": {"ports": [{"port": "80"}]}}, "spec.ports[0].port: expected integer, got string"),
        ({"metadata": {"name": 5}}, "metadata.name: expected string, got number"),
        (
            {"metadata": {"ownerReferences": [{"uid": []}]}},
            "metadata.ownerReferences[0].uid: expected string, got array",
        ),
        # int-or-string and open parts take anything.
        ({"spec": {"ports": [{"targetPort": "http"}]}, "status": {"x": [1]}}, None),
    ],
)  # fmt: skip
def test_the_first_wrong_type_is_a_400(obj: dict[str, Any], problem: str | None) -> None:
    if problem is None:
        typed.check(obj, SCHEMA, "Service", "v1")
        return
    with pytest.raises(StatusError) as raised:
        typed.check(obj, SCHEMA, "Service", "v1")
    assert (raised.value.code, raised.value.message) == (
        400,
        f'Service in version "v1" cannot be handled as a Service: {problem}',
    )
