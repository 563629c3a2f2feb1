"""Refusals in kube-apiserver v1.36.2's words (recorded with
`../shared/kube/with_kube.sh`, raw HTTPS requests as the admin user): a patch
type a subresource's PATCH does not take, and a Kubernetes protobuf body of a
type kube's scheme does not hold.

kube serves server-side apply on subresources too (deployments/x/status
answers 200 with a managedFields entry whose subresource is status; /scale
converts the owners of spec.replicas); strata does not yet, and refuses it as
kube refuses a patch type it does not take: go-restful's 415 for a built-in
route, the custom resource handler's 415 naming the types it takes."""

from __future__ import annotations

import aiohttp
import pytest

from strata.proto.k8s import core_v1_pb2, runtime_pb2
from tests.integration.test_crds import crd, define, unique_group, version
from tests.integration.test_deployments import deployment
from tests.support.registry_tester import answer, new_namespace

APPLY = "application/apply-patch+yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
GO_RESTFUL_415 = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
    b'"message":"415: Unsupported Media Type","reason":"UnsupportedMediaType",'
    b'"details":{},"code":415}\n'
)
CUSTOM_415 = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
    b'"message":"the body of the request was in an unknown format - accepted media types '
    b'include: application/json-patch+json, application/merge-patch+json",'
    b'"reason":"UnsupportedMediaType","code":415}\n'
)


async def _patched(
    http: aiohttp.ClientSession, path: str, body: bytes, content_type: str
) -> tuple[int, bytes]:
    async with http.patch(
        path, data=body, headers={"Content-Type": content_type}, params={"fieldManager": "m"}
    ) as response:
        return response.status, await response.read()


@pytest.mark.parametrize(
    ("subresource", "content_type"),
    [("status", APPLY), ("scale", APPLY), ("status", "text/plain"), ("scale", "text/plain")],
)
async def test_a_built_in_subresource_refuses_a_patch_type_in_go_restfuls_words(
    http: aiohttp.ClientSession, subresource: str, content_type: str
) -> None:
    namespace = await new_namespace(http, "subpatch")
    collection = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    await answer(http, "POST", collection, 201, json=deployment("dx"))
    path = f"{collection}/dx/{subresource}"
    assert await _patched(http, path, b"{}", content_type) == (415, GO_RESTFUL_415)


async def test_a_custom_resource_subresource_refuses_apply_in_its_handlers_words(
    http: aiohttp.ClientSession,
) -> None:
    group = unique_group()
    with_status = version("v1", subresources={"status": {}})
    await define(http, crd("gadgets", group, "Gadget", with_status))
    namespace = await new_namespace(http, "subpatch")
    collection = f"/apis/{group}/v1/namespaces/{namespace}/gadgets"
    body = {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    await answer(http, "POST", collection, 201, json=body)
    assert await _patched(http, f"{collection}/g/status", b"{}", APPLY) == (415, CUSTOM_415)


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    unknown = runtime_pb2.Unknown(raw=raw)
    unknown.typeMeta.apiVersion = api_version
    unknown.typeMeta.kind = kind
    return b"k8s\x00" + unknown.SerializeToString()


def _not_registered(kind: str, version: str, into: str, api_version: str, scheme: str) -> bytes:
    message = (
        f'{kind} in version \\"{version}\\" cannot be handled as a {into}: no kind \\"{kind}\\" '
        f'is registered for version \\"{api_version}\\" in scheme \\"{scheme}\\"'
    )
    return (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        f'"message":"{message}","reason":"BadRequest","code":400}}\n'
    ).encode()


LEGACY = "pkg/api/legacyscheme/scheme.go:30"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.mark.parametrize(
    ("method", "path", "api_version", "kind", "expected"),
    [
        (
            "POST",
            "configmaps",
            "v1",
            "Foo",
            _not_registered("Foo", "v1", "ConfigMap", "v1", LEGACY),
        ),
        (
            "POST",
            "configmaps",
            "foo/v9",
            "Bar",
            _not_registered("Bar", "v9", "ConfigMap", "foo/v9", LEGACY),
        ),
        (
            "POST",
            "configmaps",
            "apps/v1",
            "ConfigMap",
            _not_registered("ConfigMap", "v1", "ConfigMap", "apps/v1", LEGACY),
        ),
        (
            "PUT",
            "configmaps/pcm",
            "v1",
            "Foo",
            _not_registered("Foo", "v1", "ConfigMap", "v1", LEGACY),
        ),
        (
            "POST",
            "/apis/apps/v1/namespaces/NS/deployments",
            "v1",
            "Foo",
            _not_registered("Foo", "v1", "Deployment", "v1", LEGACY),
        ),
        (
            "POST",
            CRDS,
            "v1",
            "Foo",
            _not_registered(
                "Foo", "v1", "CustomResourceDefinition", "v1", "pkg/apiserver/apiserver.go:55"
            ),
        ),
    ],
)
async def test_a_protobuf_body_of_a_type_kube_does_not_hold_is_a_bad_request(
    http: aiohttp.ClientSession,
    method: str,
    path: str,
    api_version: str,
    kind: str,
    expected: bytes,
) -> None:
    namespace = await new_namespace(http, "proto")
    if not path.startswith("/"):
        path = f"/api/v1/namespaces/{namespace}/{path}"
    path = path.replace("/NS/", f"/{namespace}/")
    configmap = core_v1_pb2.ConfigMap()
    configmap.metadata.name = "pcm"
    body = _envelope(api_version, kind, configmap.SerializeToString())
    async with http.request(
        method, path, data=body, headers={"Content-Type": PROTOBUF}
    ) as response:
        assert (response.status, await response.read()) == (400, expected)


async def test_a_protobuf_body_that_names_no_type_is_the_endpoints_kind(
    http: aiohttp.ClientSession,
) -> None:
    """kube fills an envelope's missing apiVersion and kind from the endpoint's."""
    namespace = await new_namespace(http, "proto")
    configmap = core_v1_pb2.ConfigMap()
    configmap.metadata.name = "pcm"
    body = _envelope("", "", configmap.SerializeToString())
    async with http.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        data=body,
        headers={"Content-Type": PROTOBUF},
    ) as response:
        assert response.status == 201
        created = await response.json()
    assert (created["kind"], created["apiVersion"], created["metadata"]["name"]) == (
        "ConfigMap",
        "v1",
        "pcm",
    )


@pytest.mark.parametrize("api_version", ["v1", "meta.k8s.io/v1"])
async def test_a_protobuf_delete_options_body_of_an_unknown_type_is_a_bad_request(
    http: aiohttp.ClientSession, api_version: str
) -> None:
    """DeleteOptions are decoded by the meta scheme, without the handler's words."""
    namespace = await new_namespace(http, "proto")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await answer(http, "POST", path, 201, json={"metadata": {"name": "d"}})
    async with http.delete(
        f"{path}/d", data=_envelope(api_version, "Foo", b""), headers={"Content-Type": PROTOBUF}
    ) as response:
        status, body = response.status, await response.read()
    scheme = "pkg/apis/meta/internalversion/scheme/register.go:27"
    assert (status, body) == (
        400,
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        b'"no kind \\"Foo\\" is registered for version \\"'
        + api_version.encode()
        + b'\\" in scheme \\"'
        + scheme.encode()
        + b'\\"","reason":"BadRequest","code":400}\n',
    )
    async with http.delete(
        f"{path}/d", data=_envelope("", "", b""), headers={"Content-Type": PROTOBUF}
    ) as response:
        assert response.status == 200  # an envelope naming no type is DeleteOptions
