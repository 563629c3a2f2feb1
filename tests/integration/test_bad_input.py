"""Bad input gets the Kubernetes Status kube-apiserver would send, and leaves
etcd exactly as it was (the etcd revision does not move)."""

from __future__ import annotations

import io
import ssl

import aiohttp
import orjson
import pytest

from strata.dev import System
from strata.etcd import Etcd
from tests.support.registry_tester import configmap, refused, revision


@pytest.mark.parametrize(
    ("name", "field_message"),
    [
        ("Bad_Name", "a lowercase RFC 1123 subdomain must consist of"),
        ("-leading-dash", "a lowercase RFC 1123 subdomain must consist of"),
        ("x" * 254, "must be no more than 253 characters"),
    ],
)
async def test_invalid_configmap_name_is_422(
    http: aiohttp.ClientSession, system_etcd: Etcd, name: str, field_message: str
) -> None:
    body = await refused(
        http, system_etcd, "POST", "/api/v1/namespaces/default/configmaps", json=configmap(name)
    )
    assert body["code"] == 422
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(f'ConfigMap "{name}" is invalid: metadata.name: ')
    causes = body["details"]["causes"]
    assert causes[0]["field"] == "metadata.name"
    assert causes[0]["reason"] == "FieldValueInvalid"
    assert field_message in causes[0]["message"]
    assert body["details"]["kind"] == "ConfigMap" and body["details"]["name"] == name


async def test_invalid_namespace_name_is_422(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    body = await refused(
        http,
        system_etcd,
        "POST",
        "/api/v1/namespaces",
        json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "has.dot"}},
    )
    assert body["code"] == 422 and body["reason"] == "Invalid"
    assert "a lowercase RFC 1123 label must consist of" in body["message"]


async def test_missing_name_is_422_required(http: aiohttp.ClientSession, system_etcd: Etcd) -> None:
    body = await refused(
        http,
        system_etcd,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}},
    )
    assert body["code"] == 422
    assert body["details"]["causes"][0] == {
        "reason": "FieldValueRequired",
        "message": "Required value: name or generateName is required",
        "field": "metadata.name",
    }


async def test_missing_namespace_is_404(http: aiohttp.ClientSession, system_etcd: Etcd) -> None:
    body = await refused(
        http, system_etcd, "POST", "/api/v1/namespaces/nowhere/configmaps", json=configmap("x")
    )
    assert body["code"] == 404 and body["reason"] == "NotFound"
    assert body["message"] == 'namespaces "nowhere" not found'
    assert body["details"] == {"name": "nowhere", "kind": "namespaces"}


async def test_duplicate_create_is_409(http: aiohttp.ClientSession, system_etcd: Etcd) -> None:
    async with http.post(
        "/api/v1/namespaces/default/configmaps", json=configmap("dup", data={"a": "1"})
    ) as response:
        assert response.status == 201
        first = orjson.loads(await response.read())
    body = await refused(
        http,
        system_etcd,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        json=configmap("dup", data={"a": "2"}),
    )
    assert body["code"] == 409 and body["reason"] == "AlreadyExists"
    assert body["message"] == 'configmaps "dup" already exists'
    async with http.get("/api/v1/namespaces/default/configmaps/dup") as response:
        stored = orjson.loads(await response.read())
    assert stored["data"] == {"a": "1"}
    assert stored["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    "payload",
    [
        b"{not json",
        b"[1, 2]",
        b'{"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "wrongversion"}}',
        b'{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wrongkind"}}',
        b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": 1}}',
    ],
)
async def test_malformed_body_is_400(
    http: aiohttp.ClientSession, system_etcd: Etcd, payload: bytes
) -> None:
    body = await refused(
        http,
        system_etcd,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=payload,
        headers={"Content-Type": "application/json"},
    )
    assert body["code"] == 400 and body["reason"] == "BadRequest"


async def test_namespace_mismatch_is_400(http: aiohttp.ClientSession, system_etcd: Etcd) -> None:
    obj = configmap("x")
    obj["metadata"]["namespace"] = "kube-system"
    body = await refused(
        http, system_etcd, "POST", "/api/v1/namespaces/default/configmaps", json=obj
    )
    assert body["code"] == 400
    assert body["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


async def test_unsupported_media_type_is_415(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    body = await refused(
        http,
        system_etcd,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        data=b"name=x",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert body["code"] == 415 and body["reason"] == "UnsupportedMediaType"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/foos"),
        ("POST", "/api/v1/namespaces/default/foos"),
        ("GET", "/api/v2"),
        ("GET", "/api/v1/namespaces/default/configmaps/a/b"),
    ],
)
async def test_unknown_resource_is_404(
    http: aiohttp.ClientSession, system_etcd: Etcd, method: str, path: str
) -> None:
    body = await refused(http, system_etcd, method, path, json=configmap("x"))
    assert body["code"] == 404 and body["reason"] == "NotFound"
    assert body["message"] == "the server could not find the requested resource"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/apis/example.com/v1/widgets"),
        ("POST", "/apis/example.com/v1/namespaces/default/widgets"),
        ("GET", "/nothing/here"),
    ],
)
async def test_path_outside_what_is_served_is_a_plain_404(
    http: aiohttp.ClientSession, system_etcd: Etcd, method: str, path: str
) -> None:
    """kube's answer outside its REST container (an unserved group, no API at
    all) is Go's plain-text 404, not a Status."""
    before = await revision(system_etcd)
    async with http.request(method, path, json=configmap("x")) as response:
        assert (response.status, await response.read()) == (404, b"404 page not found\n")
    assert await revision(system_etcd) == before


async def test_missing_object_is_404(http: aiohttp.ClientSession, system_etcd: Etcd) -> None:
    for method in ("GET", "DELETE"):
        body = await refused(
            http, system_etcd, method, "/api/v1/namespaces/default/configmaps/absent"
        )
        assert body["code"] == 404
        assert body["message"] == 'configmaps "absent" not found'
        assert body["details"] == {"name": "absent", "kind": "configmaps"}


@pytest.mark.parametrize("watch", [None, "1"])
async def test_bad_selector_is_400(
    http: aiohttp.ClientSession, system_etcd: Etcd, watch: str | None
) -> None:
    params = {"fieldSelector": "spec.foo=bar"} | ({"watch": watch} if watch else {})
    body = await refused(http, system_etcd, "GET", "/api/v1/configmaps", params=params)
    assert body["code"] == 400 and body["message"] == (
        '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


async def test_stale_update_is_409_conflict(http: aiohttp.ClientSession, system_etcd: Etcd) -> None:
    async with http.post(
        "/api/v1/namespaces/default/configmaps", json=configmap("cas", data={"v": "1"})
    ) as response:
        created = orjson.loads(await response.read())
    fresh = dict(created, data={"v": "2"})
    async with http.put("/api/v1/namespaces/default/configmaps/cas", json=fresh) as response:
        assert response.status == 200
    stale = dict(created, data={"v": "3"})
    body = await refused(
        http, system_etcd, "PUT", "/api/v1/namespaces/default/configmaps/cas", json=stale
    )
    assert body["code"] == 409 and body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on configmaps "cas": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


async def test_no_token_is_anonymous_and_a_wrong_one_is_401(
    system: System, system_etcd: Etcd
) -> None:
    assert system.endpoints is not None
    context = ssl.create_default_context(cafile=str(system.ca_file))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as anonymous:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            body = await refused(
                anonymous,
                system_etcd,
                "POST",
                f"{system.endpoints.gateway}/api/v1/namespaces/default/configmaps",
                json=configmap("anon"),
                headers=headers,
            )
            if headers:
                assert body["code"] == 401 and body["reason"] == "Unauthorized"
            else:
                # As kube's under RBAC (the default): anonymous, and not allowed.
                assert body["code"] == 403 and body["message"] == (
                    'configmaps is forbidden: User "system:anonymous" cannot create resource '
                    '"configmaps" in API group "" in the namespace "default"'
                )
        async with anonymous.get(f"{system.endpoints.gateway}/healthz") as response:
            assert response.status == 200 and await response.text() == "ok"


@pytest.mark.parametrize(
    ("params", "code", "fragment"),
    [
        ({"limit": "ten"}, 400, 'strconv.ParseInt: parsing "ten": invalid syntax'),
        ({"resourceVersion": "abc"}, 400, "invalid resource version"),
        ({"resourceVersion": "5", "resourceVersionMatch": "Sometimes"}, 422, "Unsupported value"),
        ({"resourceVersionMatch": "Exact"}, 422, "forbidden unless resourceVersion"),
        ({"continue": "garbage!"}, 400, "continue key is not valid"),
        ({"sendInitialEvents": "false"}, 422, "sendInitialEvents is forbidden for list"),
    ],
)
async def test_bad_list_options(
    http: aiohttp.ClientSession, system_etcd: Etcd, params: dict[str, str], code: int, fragment: str
) -> None:
    body = await refused(http, system_etcd, "GET", "/api/v1/namespaces", params=params)
    assert body["code"] == code and fragment in body["message"]
    if code == 422:
        assert body["reason"] == "Invalid" and body["details"]["kind"] == "ListOptions"


REQUIRES_NOT_OLDER_THAN = (
    "resourceVersionMatch",
    "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
)


@pytest.mark.parametrize(
    ("params", "causes"),
    [
        ({"sendInitialEvents": "true"}, [REQUIRES_NOT_OLDER_THAN]),
        (
            {"resourceVersion": "0", "resourceVersionMatch": "NotOlderThan"},
            [
                (
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden for watch unless "
                    "sendInitialEvents is provided",
                )
            ],
        ),
        (
            {"sendInitialEvents": "true", "resourceVersionMatch": "Exact"},
            [
                REQUIRES_NOT_OLDER_THAN,
                (
                    "resourceVersionMatch",
                    'Unsupported value: "Exact": supported values: "NotOlderThan"',
                ),
            ],
        ),
        (
            {
                "sendInitialEvents": "true",
                "resourceVersionMatch": "NotOlderThan",
                "continue": "abc",
            },
            [
                (
                    "resourceVersionMatch",
                    "Forbidden: resourceVersionMatch is forbidden when continue is provided",
                )
            ],
        ),
    ],
)
async def test_bad_watch_options(
    http: aiohttp.ClientSession,
    system_etcd: Etcd,
    params: dict[str, str],
    causes: list[tuple[str, str]],
) -> None:
    body = await refused(
        http, system_etcd, "GET", "/api/v1/namespaces", params={"watch": "1", **params}
    )
    assert (body["code"], body["reason"]) == (422, "Invalid")
    assert body["details"]["kind"] == "ListOptions"
    assert body["details"]["group"] == "meta.k8s.io"
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == causes
    if len(causes) == 1:
        field, message = causes[0]
        assert body["message"] == f'ListOptions.meta.k8s.io "" is invalid: {field}: {message}'


async def test_tampered_continue_token_is_400(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    async with http.get("/api/v1/namespaces", params={"limit": "1"}) as response:
        token = orjson.loads(await response.read())["metadata"]["continue"]
    body = await refused(
        http,
        system_etcd,
        "GET",
        "/api/v1/namespaces",
        params={"limit": "1", "continue": token[:-2]},
    )
    assert body["code"] == 400 and body["reason"] == "BadRequest"


async def test_oversized_object_is_413(http: aiohttp.ClientSession, system_etcd: Etcd) -> None:
    # Valid field by field (annotations alone may not pass 256 KiB), too large for
    # storage as a whole: some 1.7 MB of finalizers.
    finalizers = [f"example.com/finalizer-{i:06d}" for i in range(60_000)]
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "huge", "finalizers": finalizers},
    }
    payload = io.BytesIO(orjson.dumps(namespace))
    body = await refused(
        http,
        system_etcd,
        "POST",
        "/api/v1/namespaces",
        data=payload,
        headers={"Content-Type": "application/json"},
    )
    assert body["code"] == 413 and body["reason"] == "RequestEntityTooLarge"


async def test_secret_data_that_is_not_base64_is_400(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    body = await refused(
        http,
        system_etcd,
        "POST",
        "/api/v1/namespaces/default/secrets",
        json={**secret, "data": {"k": "not base64!"}},
    )
    assert (body["code"], body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3'
    )


async def test_a_lease_duration_that_is_not_an_integer_is_400(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l"},
        "spec": {"leaseDurationSeconds": "15"},
    }
    body = await refused(
        http,
        system_etcd,
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        json=lease,
    )
    assert (body["code"], body["reason"]) == (400, "BadRequest")
    assert body["message"] == (
        'Lease in version "v1" cannot be handled as a Lease: json: cannot unmarshal string into '
        "Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32"
    )
