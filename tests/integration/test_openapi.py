"""/openapi/v3 against the running system: an index of every group-version
discovery serves, each document at a URL carrying its hash, and in each the
operations and schemas clients look for (kubectl's server-side field validation
check, kubectl explain's schema lookup), custom resources included. And
/openapi/v2, in JSON and in gnostic's protobuf (which kubectl asks for), the
protobuf read back with protos/gnostic/openapi_v2.proto."""

from __future__ import annotations

import gzip
import hashlib
from typing import Any

import aiohttp
import orjson
from multidict import CIMultiDictProxy

from strata.proto.gnostic import openapi_v2_pb2
from tests.integration.test_crds import crd, define, undefine, unique_group
from tests.support import gnostic
from tests.support.registry_tester import Obj, answer

REF = "#/components/schemas/"
PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
# What kubectl asks for (kube takes both names).
OLD_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


async def index(http: aiohttp.ClientSession) -> dict[str, str]:
    paths = (await answer(http, "GET", "/openapi/v3", 200))["paths"]
    return {path: entry["serverRelativeURL"] for path, entry in paths.items()}


async def discovered(http: aiohttp.ClientSession) -> dict[str, list[Obj]]:
    """Every group-version's discovery resources, by /openapi/v3's path for it."""
    found = {"api/v1": (await answer(http, "GET", "/api/v1", 200))["resources"]}
    for group in (await answer(http, "GET", "/apis", 200))["groups"]:
        for version in group["versions"]:
            gv = version["groupVersion"]
            found[f"apis/{gv}"] = (await answer(http, "GET", f"/apis/{gv}", 200))["resources"]
    return found


def patch_operations(doc: Obj, gvk: dict[str, str]) -> list[Obj]:
    return [
        ops["patch"]
        for ops in doc["paths"].values()
        if "patch" in ops and ops["patch"]["x-kubernetes-group-version-kind"] == gvk
    ]


def schema_for(doc: Obj, gvk: dict[str, str]) -> Obj:
    schemas: dict[str, Obj] = doc["components"]["schemas"]
    (found,) = [s for s in schemas.values() if gvk in s.get("x-kubernetes-group-version-kind", [])]
    return found


async def test_every_served_kind_has_its_document(http: aiohttp.ClientSession) -> None:
    urls = await index(http)
    everything = await discovered(http)
    # Other tests' custom resource groups come and go between the two reads.
    assert {p for p in urls if "example" not in p} == {p for p in everything if "example" not in p}
    for path, resources in everything.items():
        if path not in urls:
            continue
        assert urls[path].startswith(f"/openapi/v3/{path}?hash=")
        doc = await answer(http, "GET", urls[path], 200)
        assert doc["openapi"].startswith("3.")
        group, _, version = path.removeprefix("api/").removeprefix("apis/").rpartition("/")
        for r in resources:
            if "/" in r["name"]:
                continue
            gvk = {"group": group, "kind": r["kind"], "version": version}
            schema = schema_for(doc, gvk)
            assert {"apiVersion", "kind", "metadata"} <= set(schema["properties"]), r["name"]
            patches = patch_operations(doc, gvk)
            # kubectl reads the first PATCH operation it meets for a kind: all
            # of them must take fieldValidation for it to leave validation here.
            # (The review kinds are created only, as kube serves them.)
            assert bool(patches) == ("patch" in r["verbs"]), r["name"]
            for operation in patches:
                names = {p["name"] for p in operation["parameters"]}
                assert {"fieldValidation", "fieldManager", "dryRun", "force"} <= names


async def test_a_stale_hash_leads_to_the_current_document(http: aiohttp.ClientSession) -> None:
    current = (await index(http))["apis/apps/v1"]
    async with http.get("/openapi/v3/apis/apps/v1?hash=0", allow_redirects=False) as response:
        assert response.status == 301
        assert response.headers["Location"] == current
    async with http.get(current) as response:
        assert response.status == 200
        assert response.headers["Cache-Control"] == "public, immutable"
    async with http.get("/openapi/v3/apis/apps/v1") as response:
        assert response.status == 200
        assert response.headers["Cache-Control"] == "no-cache, private"
    missing = await answer(http, "GET", "/openapi/v3/apis/nothing.example.com/v1", 404)
    assert (missing["kind"], missing["reason"]) == ("Status", "NotFound")


async def test_operations_are_named_and_typed_as_kube_names_them(
    http: aiohttp.ClientSession,
) -> None:
    doc = await answer(http, "GET", "/openapi/v3/apis/apps/v1", 200)
    collection = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]
    assert collection["post"]["operationId"] == "createAppsV1NamespacedDeployment"
    assert collection["get"]["x-kubernetes-action"] == "list"
    created: Any = collection["post"]["responses"]["201"]["content"]["application/json"]
    assert created["schema"] == {"$ref": f"{REF}io.k8s.api.apps.v1.Deployment"}
    scale = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling",
        "kind": "Scale",
        "version": "v1",
    }
    assert "io.k8s.api.autoscaling.v1.Scale" in doc["components"]["schemas"]
    assert set(scale["patch"]["requestBody"]["content"]) == {
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    }
    rbac = await answer(http, "GET", "/openapi/v3/apis/rbac.authorization.k8s.io/v1", 200)
    roles = rbac["paths"]["/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"]
    assert roles["get"]["operationId"] == "readRbacAuthorizationV1ClusterRole"


async def test_a_custom_resource_is_described_by_its_crd_schema(
    http: aiohttp.ClientSession,
) -> None:
    group = unique_group()
    body = crd("gadgets", group, "Gadget")
    await define(http, body)
    try:
        path = f"apis/{group}/v1"
        urls = await index(http)
        doc = await answer(http, "GET", urls[path], 200)
        gvk = {"group": group, "kind": "Gadget", "version": "v1"}
        schema = schema_for(doc, gvk)
        assert (
            schema["properties"]["spec"]
            == body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        )
        name = ".".join(reversed(group.split("."))) + ".v1.Gadget"
        assert doc["components"]["schemas"][name] == schema
        assert patch_operations(doc, gvk)
    finally:
        await undefine(http, body["metadata"]["name"])
    assert f"apis/{group}/v1" not in await index(http)


async def test_openapi_v2_is_json(http: aiohttp.ClientSession) -> None:
    doc = await answer(http, "GET", "/openapi/v2", 200)
    assert doc["swagger"] == "2.0"
    deployment = doc["definitions"]["io.k8s.api.apps.v1.Deployment"]
    assert deployment["properties"]["metadata"] == {
        "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    }
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert {k: v for k, v in patch["parameters"][-1].items() if k != "schema"} == {
        "name": "body",
        "in": "body",
        "required": True,
    }
    names = {p["name"]: p for p in patch["parameters"]}
    assert names["fieldValidation"]["type"] == "string"
    assert "application/apply-patch+yaml" in patch["consumes"]
    assert "#/components/" not in str(doc)


async def v2(
    http: aiohttp.ClientSession, accept: str, **headers: str
) -> tuple[int, CIMultiDictProxy[str], bytes]:
    """/openapi/v2's status, headers and body as sent (not decompressed)."""
    async with http.get(
        "/openapi/v2",
        headers={"Accept": accept, "Accept-Encoding": "identity", **headers},
        auto_decompress=False,
    ) as response:
        return response.status, response.headers, await response.read()


async def test_openapi_v2_in_protobuf_describes_what_the_json_does(
    http: aiohttp.ClientSession,
) -> None:
    for _ in range(5):  # the same document twice (other tests' CRDs come and go)
        status, json_headers, json_body = await v2(http, "application/json")
        assert status == 200
        # kubectl's Accept, answered under the name kube answers with.
        status, headers, body = await v2(http, OLD_PROTOBUF)
        assert status == 200
        if headers["Etag"] == json_headers["Etag"]:
            break
    assert headers["Content-Type"] == PROTOBUF
    # One ETag for both, the JSON's hash, as kube's.
    assert headers["Etag"] == json_headers["Etag"]
    assert headers["Etag"] == f'"{hashlib.sha512(json_body).hexdigest().upper()}"'
    assert headers.getall("Vary") == ["Accept-Encoding", "Accept"]
    assert headers["Cache-Control"] == "no-cache, private"
    doc = orjson.loads(json_body)
    decoded = gnostic.to_json(openapi_v2_pb2.Document.FromString(body))
    assert decoded["definitions"] == gnostic.comparable(doc["definitions"])
    assert decoded["paths"] == gnostic.comparable(doc["paths"])
    assert decoded == gnostic.comparable(doc)
    assert "io.k8s.api.core.v1.Secret" in decoded["definitions"]
    status, headers, _ = await v2(http, PROTOBUF)
    assert (status, headers["Content-Type"]) == (200, PROTOBUF)


async def test_openapi_v2_answers_as_kube_does(http: aiohttp.ClientSession) -> None:
    status, headers, body = await v2(http, OLD_PROTOBUF)
    etag = headers["Etag"]
    # A client holding the current document gets 304 and no body.
    for if_none_match in (etag, f"W/{etag}", f'"other", {etag}', "*"):
        status, headers, empty = await v2(http, OLD_PROTOBUF, **{"If-None-Match": if_none_match})
        assert (status, empty, headers["Etag"]) == (304, b"", etag)
        assert headers.getall("Vary") == ["Accept-Encoding", "Accept"]
    status, _, again = await v2(http, OLD_PROTOBUF, **{"If-None-Match": '"other"'})
    assert (status, again) == (200, body)
    # gzip when taken, as kube.
    status, headers, gzipped = await v2(http, OLD_PROTOBUF, **{"Accept-Encoding": "gzip"})
    assert (status, headers["Content-Encoding"]) == (200, "gzip")
    assert gzip.decompress(gzipped) == body
    # Nothing it writes: kube's empty 406 (kube-openapi writes no Status).
    for accept in (
        "application/yaml",
        "application/com.github.proto-openapi.spec.v2@v2.0+protobuf",
    ):
        status, headers, refused = await v2(http, accept)
        assert (status, refused) == (406, b"")
        assert headers.getall("Vary") == ["Accept-Encoding", "Accept"]
        assert "Etag" not in headers


async def test_openapi_v2_follows_what_is_served(http: aiohttp.ClientSession) -> None:
    group = unique_group()
    body = crd("gadgets", group, "Gadget")
    name = ".".join(reversed(group.split("."))) + ".v1.Gadget"
    _, _, before = await v2(http, OLD_PROTOBUF)
    await define(http, body)
    try:
        _, _, during = await v2(http, OLD_PROTOBUF)
        decoded = gnostic.to_json(openapi_v2_pb2.Document.FromString(during))
        gvk = {"group": group, "kind": "Gadget", "version": "v1"}
        assert decoded["definitions"][name]["x-kubernetes-group-version-kind"] == [gvk]
        assert f"/apis/{group}/v1/namespaces/{{namespace}}/gadgets/{{name}}" in decoded["paths"]
    finally:
        await undefine(http, body["metadata"]["name"])
    _, _, after = await v2(http, OLD_PROTOBUF)
    assert name not in gnostic.to_json(openapi_v2_pb2.Document.FromString(after))["definitions"]
    assert before != during
