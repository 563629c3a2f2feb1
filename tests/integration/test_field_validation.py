"""fieldValidation on built-in kinds through the running system: fields a kind
does not know (metadata's included) are dropped, and fields a body gives twice
keep their last value; both earn a warning each (Warn, the default), nothing
(Ignore) or kube's strict decoding error (Strict), on creates, updates and
patches alike: a YAML body's repeated keys by line, a patch's own duplicate
fields (a 422 on "patch" when Strict), a JSON patch's operations' fields, an
apply configuration's repeated keys."""

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
    # A patch's: kube's 422 on the field "patch".
    refused = await answer(
        http,
        "PATCH",
        f"{path}/warned?fieldValidation=Strict",
        422,
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
    # kube's typed decoder's order: as it reads them.
    problems = 'duplicate field "metadata.name", duplicate field "data.k", unknown field "dta"'
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
            '299 - "duplicate field \\"metadata.name\\""',
            '299 - "duplicate field \\"data.k\\""',
            '299 - "unknown field \\"dta\\""',
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


def _warnings(response: aiohttp.ClientResponse) -> list[str]:
    return [
        w.removeprefix('299 - "').removesuffix('"').replace('\\"', '"')
        for w in response.headers.getall("Warning", [])
    ]


def _yaml(name: str) -> bytes:
    return (
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  name: %s\n  app: web\n"
        b"data:\n  k: first\n  k: second\ndta: x\n" % (name.encode(), name.encode())
    )


YAML_PROBLEMS = [
    'line 5: key "name" already set in map',
    'line 9: key "k" already set in map',
    # The JSON made of YAML has its keys in order, and kube meets them so.
    'unknown field "dta"',
    'unknown field "metadata.app"',
]


async def test_a_yaml_bodys_repeated_keys_by_line(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    yaml_type = {"Content-Type": "application/yaml"}
    strict = (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        "yaml: unmarshal errors:\n  "
        + "\n  ".join(YAML_PROBLEMS[:2])
        + ", "
        + ", ".join(YAML_PROBLEMS[2:])
    )
    refused = await answer(
        http, "POST", f"{path}?fieldValidation=Strict", 400, data=_yaml("y"), headers=yaml_type
    )
    assert (refused["reason"], refused["message"]) == ("BadRequest", strict)
    assert not (await system_etcd.range(f"/registry/configmaps/{namespace}/y".encode())).kvs

    async with http.post(path, data=_yaml("y"), headers=yaml_type) as response:
        created = orjson.loads(await response.read())
        assert response.status == 201, created
        assert _warnings(response) == YAML_PROBLEMS
    assert created["data"] == {"k": "second"}

    body = _yaml("y").replace(b"dta: x", b"dta: x\nmetadata:\n  name: y")
    refused = await answer(
        http, "PUT", f"{path}/y?fieldValidation=Strict", 400, data=body, headers=yaml_type
    )
    assert refused["message"].startswith(
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'yaml: unmarshal errors:\n  line 5: key "name" already set in map\n'
    )
    async with http.put(f"{path}/y?fieldValidation=Ignore", data=body, headers=yaml_type) as r:
        assert r.status == 200 and "Warning" not in r.headers


async def test_a_patchs_own_duplicate_fields(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await answer(http, "POST", path, 201, json={"metadata": {"name": "p"}, "data": {"k": "v"}})
    patch = b'{"data": {"k": "1", "k": "2"}, "dta": "x"}'
    problems = 'strict decoding error: duplicate field "data.k", unknown field "dta"'
    for media, quoted in (
        ("application/merge-patch+json", None),
        ("application/strategic-merge-patch+json", '"map[data:map[k:2] dta:x]"'),
    ):
        headers = {"Content-Type": media}
        key = f"/registry/configmaps/{namespace}/p".encode()
        before = (await system_etcd.range(key)).kvs[0]
        refused = await answer(
            http, "PATCH", f"{path}/p?fieldValidation=Strict", 422, data=patch, headers=headers
        )
        assert refused["reason"] == "Invalid"
        [cause] = refused["details"]["causes"]
        assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", "patch")
        assert refused["message"] == f' "" is invalid: patch: {cause["message"]}'
        assert cause["message"].endswith(f": {problems}")
        if quoted is None:  # the patched object, quoted
            value = cause["message"].removeprefix("Invalid value: ").removesuffix(f": {problems}")
            assert orjson.loads(orjson.loads(value))["data"] == {"k": "2"}
        else:
            assert cause["message"] == f"Invalid value: {quoted}: {problems}"
        assert (await system_etcd.range(key)).kvs[0].mod_revision == before.mod_revision

        async with http.patch(f"{path}/p", data=patch, headers=headers) as response:
            assert response.status == 200
            assert _warnings(response) == ['duplicate field "data.k"', 'unknown field "dta"']
            assert orjson.loads(await response.read())["data"] == {"k": "2"}

    operations = (
        b'[{"op": "add", "path": "/data/j", "value": "v", "foo": 1},'
        b' {"op": "replace", "path": "/data/j", "path": "/data/k", "value": "3"}]'
    )
    headers = {"Content-Type": "application/json-patch+json"}
    async with http.patch(f"{path}/p", data=operations, headers=headers) as response:
        assert response.status == 200
        assert _warnings(response) == [
            'json patch unknown field "[0].foo"',
            'json patch duplicate field "[1].path"',
        ]
        assert orjson.loads(await response.read())["data"] == {"j": "v", "k": "3"}
    async with http.patch(
        f"{path}/p?fieldValidation=Ignore", data=operations, headers=headers
    ) as response:
        assert response.status == 200 and "Warning" not in response.headers


APPLIED = b"""{
  "apiVersion": "v1",
  "kind": "ConfigMap",
  "metadata": {"name": "applied"},
  "data": {"k": "1",
\t"k": "2"}
}"""


async def test_an_apply_configurations_repeated_keys(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps/applied?fieldManager=m"
    headers = {"Content-Type": "application/apply-patch+yaml"}
    refused = await answer(
        http, "PATCH", f"{path}&fieldValidation=Strict", 400, data=APPLIED, headers=headers
    )
    assert refused["message"] == (
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 6: key "k" already set in map'
    )
    assert not (await system_etcd.range(f"/registry/configmaps/{namespace}/applied".encode())).kvs
    async with http.patch(path, data=APPLIED, headers=headers) as response:
        assert response.status == 201
        assert _warnings(response) == ['line 6: key "k" already set in map']
        assert orjson.loads(await response.read())["data"] == {"k": "2"}
