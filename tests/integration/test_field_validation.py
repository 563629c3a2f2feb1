"""fieldValidation on built-in kinds through the running system: fields a kind
does not know (metadata's included) are dropped, and fields a body gives twice
keep their last value; both earn a warning each (Warn, the default), nothing
(Ignore) or kube's strict decoding error (Strict), on creates, updates and
patches alike."""

from __future__ import annotations

import aiohttp
import orjson
import pytest

from strata.etcd import Etcd
from tests.support.registry_tester import Obj, answer, new_namespace


@pytest.fixture(scope="module")
async def namespace(http: aiohttp.ClientSession) -> str:
    return await new_namespace(http, "fields")


def config_map(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "app": "web"},
        "dta": {"a": "b"},
        "data": {"k": "v"},
    }


STRICT = (
    'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
    'unknown field "metadata.app", unknown field "dta"'
)


async def test_unknown_fields_of_a_built_in_kind(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    refused = await answer(
        http, "POST", f"{path}?fieldValidation=Strict", 400, json=config_map("strict")
    )
    assert (refused["reason"], refused["message"]) == ("BadRequest", STRICT)
    key = f"/registry/configmaps/{namespace}/"
    assert not (await system_etcd.range(f"{key}strict".encode())).kvs

    async with http.post(path, json=config_map("warned")) as response:
        created = orjson.loads(await response.read())
        assert response.status == 201, created
        assert response.headers.getall("Warning") == [
            '299 - "unknown field \\"metadata.app\\""',
            '299 - "unknown field \\"dta\\""',
        ]
    assert "dta" not in created and "app" not in created["metadata"]
    stored = orjson.loads((await system_etcd.range(f"{key}warned".encode())).kvs[0].value)
    assert "dta" not in stored and stored["data"] == {"k": "v"}

    async with http.post(f"{path}?fieldValidation=Ignore", json=config_map("quiet")) as response:
        assert response.status == 201
        assert "Warning" not in response.headers

    changed = {**created, "dta": {"x": "y"}, "data": {"k": "changed"}}
    refused = await answer(http, "PUT", f"{path}/warned?fieldValidation=Strict", 400, json=changed)
    assert refused["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "dta"'
    )
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "quiet", "uid": "u-1"}
    refused = await answer(
        http,
        "PATCH",
        f"{path}/warned?fieldValidation=Strict",
        400,
        data=orjson.dumps({"metadata": {"ownerReferences": [{**owner, "bogus": 1}]}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert refused["message"].endswith(
        'strict decoding error: unknown field "metadata.ownerReferences[0].bogus"'
    )
    unchanged = await answer(http, "GET", f"{path}/warned", 200)
    assert unchanged["data"] == {"k": "v"}
    assert unchanged["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_nested_unknown_fields_and_open_parts(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "held"},
        "spec": {"holderIdentity": "a", "holder": "typo"},
    }
    path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    refused = await answer(http, "POST", f"{path}?fieldValidation=Strict", 400, json=lease)
    assert refused["message"] == (
        'Lease in version "v1" cannot be handled as a Lease: strict decoding error: '
        'unknown field "spec.holder"'
    )
    # A part strata does not describe field by field keeps what it is given.
    affinity = {"clientIP": {"timeoutSeconds": 60}, "futureField": True}
    service: Obj = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "open"},
        "spec": {"ports": [{"port": 80}], "sessionAffinityConfig": affinity},
    }
    path = f"/api/v1/namespaces/{namespace}/services"
    created = await answer(http, "POST", f"{path}?fieldValidation=Strict", 201, json=service)
    assert created["spec"]["sessionAffinityConfig"] == affinity
    service["metadata"]["name"] = "closed"
    service["spec"]["futureField"] = True
    refused = await answer(http, "POST", f"{path}?fieldValidation=Strict", 400, json=service)
    assert refused["message"].endswith('unknown field "spec.futureField"')


def _twice(name: str, value: str) -> bytes:
    """A ConfigMap whose JSON gives metadata.name and data.k twice, and an
    unknown field whose own fields are duplicated too (reported as unknown only)."""
    return (
        b'{"apiVersion": "v1", "kind": "ConfigMap",'
        b' "metadata": {"name": "%s", "name": "%s"},'
        b' "data": {"k": "first", "k": "%s"},'
        b' "dta": {"a": "1", "a": "2"}}' % (name.encode(), name.encode(), value.encode())
    )


async def test_duplicate_fields_keep_the_last_value_and_are_reported(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    problems = 'unknown field "dta", duplicate field "metadata.name", duplicate field "data.k"'
    json_type = {"Content-Type": "application/json"}
    refused = await answer(
        http,
        "POST",
        f"{path}?fieldValidation=Strict",
        400,
        data=_twice("twice-strict", "v"),
        headers=json_type,
    )
    assert (refused["reason"], refused["message"]) == (
        "BadRequest",
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        + problems,
    )
    key = f"/registry/configmaps/{namespace}/twice-strict"
    assert not (await system_etcd.range(key.encode())).kvs

    async with http.post(path, data=_twice("twice", "second"), headers=json_type) as response:
        created = orjson.loads(await response.read())
        assert response.status == 201, created
        assert response.headers.getall("Warning") == [
            '299 - "unknown field \\"dta\\""',
            '299 - "duplicate field \\"metadata.name\\""',
            '299 - "duplicate field \\"data.k\\""',
        ]
    assert created["data"] == {"k": "second"}

    async with http.post(
        f"{path}?fieldValidation=Ignore", data=_twice("twice-quiet", "v"), headers=json_type
    ) as response:
        assert response.status == 201
        assert "Warning" not in response.headers

    rv = created["metadata"]["resourceVersion"]
    body = _twice("twice", "third").replace(
        b'"name": "twice"}', b'"name": "twice", "resourceVersion": "%s"}' % rv.encode()
    )
    refused = await answer(
        http, "PUT", f"{path}/twice?fieldValidation=Strict", 400, data=body, headers=json_type
    )
    assert refused["message"].endswith(problems)
    unchanged = await answer(http, "GET", f"{path}/twice", 200)
    assert unchanged["data"] == {"k": "second"}
    assert unchanged["metadata"]["resourceVersion"] == rv
