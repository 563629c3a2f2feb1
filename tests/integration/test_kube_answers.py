"""More of kube-apiserver's answers, byte for byte: watch events with Go's
escapes, health checks that answer every method, the 406s (go-restful's and
kube's own, indented when the Status cannot be negotiated either), the 415s for
a body and for a patch, field errors' unsupported values, and what the OpenAPI
documents list as each operation's responses.

Every expected value here was recorded from a real kube-apiserver v1.36.2
(`../shared/kube/with_kube.sh python probe.py`, raw HTTPS requests as the admin
user, as in test_kube_bytes.py); only uids and timestamps are put aside."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest

from tests.integration.test_crds import crd, define, undefine, unique_group

NS = "/api/v1/namespaces/default"
ONE = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
STREAMS = f"{ONE}, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
ROUTE_406 = "406: Not Acceptable\\n\\nAvailable representations: "
ONLY = f"only the following media types are accepted: {ONE}"
UNKNOWN_BODY = (
    f"the body of the request was in an unknown format - accepted media types include: {ONE}"
)


def _compact(message: str, reason: str, code: int, details: bool) -> bytes:
    """A failure Status as kube's encoder writes it (message already JSON-escaped)."""
    shown = ',"details":{}' if details else ""
    return (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        f'"message":"{message}","reason":"{reason}"{shown},"code":{code}}}\n'
    ).encode()


def _indented(message: str, reason: str, code: int, details: bool) -> bytes:
    """The same Status as kube's WriteRawJSON (json.MarshalIndent) writes it."""
    shown = '  "details": {},\n' if details else ""
    return (
        '{\n  "kind": "Status",\n  "apiVersion": "v1",\n  "metadata": {},\n'
        f'  "status": "Failure",\n  "message": "{message}",\n  "reason": "{reason}",\n'
        f'{shown}  "code": {code}\n}}'
    ).encode()


async def test_watch_events_have_gos_escapes(http: aiohttp.ClientSession) -> None:
    """The event line as kube wrote it for this ConfigMap (probe "esc watch")."""
    text = "a<b>&c\u2028d\u2029e\x01f\x08g\x0ch\x7fi\u00e9"
    configmap = {
        "metadata": {"name": "ka-escapes", "annotations": {"x": text}},
        "data": {"k": "<&>"},
    }
    async with http.post(f"{NS}/configmaps", json=configmap) as response:
        assert response.status == 201
    params = {"watch": "1", "fieldSelector": "metadata.name=ka-escapes", "timeoutSeconds": "5"}
    try:
        async with http.get(f"{NS}/configmaps", params=params) as response:
            line = await response.content.readline()
    finally:
        async with http.delete(f"{NS}/configmaps/ka-escapes") as response:
            assert response.status == 200
    # (The object's key order is the registry's; the escapes are the gateway's.)
    assert line.startswith(b'{"type":"ADDED","object":{')
    assert (
        b'"annotations":{"x":"a\\u003cb\\u003e\\u0026c\\u2028d\\u2029e\\u0001f\\bg\\fh'
        + "\x7fi\u00e9".encode()
        + b'"}'
    ) in line
    assert line.endswith(b'"data":{"k":"\\u003c\\u0026\\u003e"}}}\n')


HEALTH_PATHS = ["/healthz", "/livez", "/readyz", "/healthz/ping", "/livez/ping", "/readyz/ping"]


@pytest.mark.parametrize("path", HEALTH_PATHS)
@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])
async def test_health_answers_every_method(
    http: aiohttp.ClientSession, path: str, method: str
) -> None:
    body = b"{}" if method in ("POST", "PUT", "PATCH") else None
    async with http.request(method, path, data=body) as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
        assert await response.read() == (b"" if method == "HEAD" else b"ok")


async def test_a_verbose_health_check_answers_a_post(http: aiohttp.ClientSession) -> None:
    async with http.post("/healthz?verbose") as response:
        raw = await response.read()
    assert raw.startswith(b"[+]ping ok\n") and raw.endswith(b"healthz check passed\n")


def _route(produces: str, *, writable: bool = False) -> bytes:
    """go-restful's 406 (empty details), compact when Accept allows a Status."""
    write = _compact if writable else _indented
    return write(ROUTE_406 + produces, "NotAcceptable", 406, True)


OWN_406 = _indented(ONLY, "NotAcceptable", 406, False)
TABLE_V2 = "application/json;as=Table;g=meta.k8s.io;v=v2"
CM = f"{NS}/configmaps/ka-cm"
# (method, path, Accept, kube's body)
REFUSED_OUTPUTS: list[tuple[str, str, str, bytes]] = [
    ("GET", f"{NS}/configmaps", "application/bogus", _route(STREAMS)),
    ("GET", f"{NS}/configmaps?pretty=true", "application/bogus", _route(STREAMS)),
    ("GET", f"{NS}/configmaps", "text/plain", _route(STREAMS)),
    ("GET", CM, "application/bogus", _route(ONE)),
    ("GET", f"{NS}/configmaps/nope", "application/bogus", _route(ONE)),
    ("GET", f"{NS}/configmaps?watch=1&timeoutSeconds=1", "application/bogus", _route(STREAMS)),
    (
        "GET",
        "/api/v1/watch/namespaces/default/configmaps/ka-cm",
        "application/bogus",
        _route(STREAMS),
    ),
    ("GET", "/apis/apps/v1/namespaces/default/deployments", "application/bogus", _route(STREAMS)),
    ("GET", "/api/v1/namespaces", "application/bogus", _route(STREAMS)),
    ("DELETE", f"{NS}/configmaps/nope", "application/bogus", _route(ONE)),
    ("GET", f"{NS}/configmaps", "application/*", _route(STREAMS, writable=True)),
    ("GET", CM, "application/*", _route(ONE, writable=True)),
    ("GET", f"{NS}/configmaps", "APPLICATION/JSON", _route(STREAMS)),
    ("GET", CM, "application/foo+json", _route(ONE)),
    ("GET", f"{NS}/configmaps", "application/json;as=Foo", OWN_406),
    ("GET", f"{NS}/configmaps", "application/json;as=Table;g=meta.k8s.io;v=v9", OWN_406),
    ("GET", CM, f"application/bogus, {TABLE_V2}", OWN_406),
    ("GET", "/api", "application/bogus", _route(ONE)),
    ("GET", "/api/v1", "application/bogus", _route(ONE)),
    ("GET", "/api/v1", "application/*", _route(ONE, writable=True)),
    ("GET", "/apis/apps/v1", "application/bogus", _route(ONE)),
    ("GET", "/version", "application/bogus", _route("application/json")),
    ("GET", "/version", "text/*", _route("application/json")),
    ("GET", "/apis", "application/bogus", OWN_406),
    ("GET", "/apis/apps", "application/bogus", OWN_406),
]


async def test_refused_outputs_are_kubes_406s(http: aiohttp.ClientSession) -> None:
    async with http.post(f"{NS}/configmaps", json={"metadata": {"name": "ka-cm"}}) as response:
        assert response.status in (201, 409)
    for method, path, accept, expected in REFUSED_OUTPUTS:
        async with http.request(method, path, headers={"Accept": accept}) as response:
            assert (response.status, await response.read()) == (406, expected), (path, accept)
            assert response.content_type == "application/json"
    # kube's router refuses before the handler: nothing is created.
    created = {"metadata": {"name": "ka-refused"}}
    async with http.post(
        f"{NS}/configmaps", json=created, headers={"Accept": "application/bogus"}
    ) as response:
        assert await response.read() == _indented(ROUTE_406 + ONE, "NotAcceptable", 406, True)
    async with http.get(f"{NS}/configmaps/ka-refused") as response:
        assert response.status == 404


async def test_custom_resources_refuse_as_their_own_handler_does(
    http: aiohttp.ClientSession,
) -> None:
    """kube serves custom resources without its router: the 406 is its own, and
    a PATCH's 415 names the patch types a custom resource takes."""
    group = unique_group()
    body = crd("widgets", group, "Widget")
    await define(http, body)
    path = f"/apis/{group}/v1/namespaces/default/widgets"
    try:
        widget = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}}
        async with http.post(path, json=widget) as response:
            assert response.status == 201
        for at in (path, f"{path}/w"):
            async with http.get(at, headers={"Accept": "application/bogus"}) as response:
                assert (response.status, await response.read()) == (406, OWN_406)
        patch_types = (
            "application/json-patch+json, application/merge-patch+json, "
            "application/apply-patch+yaml"
        )
        message = (
            "the body of the request was in an unknown format - accepted media types include: "
            + patch_types
        )
        refused = _compact(message, "UnsupportedMediaType", 415, False)
        for content_type in ("application/strategic-merge-patch+json", "text/bogus"):
            headers = {"Content-Type": content_type}
            async with http.patch(f"{path}/w", data=b"{}", headers=headers) as response:
                assert (response.status, await response.read()) == (415, refused)
        headers = {"Content-Type": "text/bogus"}
        async with http.post(path, data=b"{}", headers=headers) as response:
            assert await response.read() == BODY_415
    finally:
        await undefine(http, body["metadata"]["name"])


@pytest.mark.parametrize("accept", [" application/json", "application/json;q=0"])
async def test_what_kubes_router_takes_is_answered(
    http: aiohttp.ClientSession, accept: str
) -> None:
    async with http.get("/api/v1/namespaces/default", headers={"Accept": accept}) as response:
        assert response.status == 200


BODY_415 = _compact(UNKNOWN_BODY, "UnsupportedMediaType", 415, False)
PATCH_415 = _compact("415: Unsupported Media Type", "UnsupportedMediaType", 415, True)
# (method, path, Content-Type, kube's body)
UNSUPPORTED: list[tuple[str, str, str, bytes]] = [
    ("POST", f"{NS}/configmaps", "text/bogus", BODY_415),
    ("POST", f"{NS}/configmaps", "text/bogus; charset=utf-8", BODY_415),
    ("POST", f"{NS}/configmaps", "application/xml", BODY_415),
    ("PUT", CM, "text/bogus", BODY_415),
    (
        "POST",
        f"{NS}/configmaps?pretty=1",
        "text/bogus",
        _indented(UNKNOWN_BODY, "UnsupportedMediaType", 415, False),
    ),
    ("PATCH", CM, "text/bogus", PATCH_415),
    ("PATCH", CM, "application/json", PATCH_415),
    ("PATCH", CM, "application/yaml", PATCH_415),
    (
        "PATCH",
        f"{CM}?pretty=1",
        "text/bogus",
        _indented("415: Unsupported Media Type", "UnsupportedMediaType", 415, True),
    ),
]


async def test_unsupported_bodies_are_kubes_415s(http: aiohttp.ClientSession) -> None:
    async with http.post(f"{NS}/configmaps", json={"metadata": {"name": "ka-cm"}}) as response:
        assert response.status in (201, 409)
    for method, path, content_type, expected in UNSUPPORTED:
        headers = {"Content-Type": content_type}
        async with http.request(method, path, data=b"{}", headers=headers) as response:
            assert (response.status, await response.read()) == (415, expected), (path, content_type)


SERVICE_TYPES = '\\"ClusterIP\\", \\"ExternalName\\", \\"LoadBalancer\\", \\"NodePort\\"'


def _invalid(kind: str, name: str, group: str, field: str, cause: str) -> bytes:
    """kube's 422 for one field error (cause already JSON-escaped)."""
    qualified = f"{kind}.{group}" if group else kind
    details = f'"name":"{name}",' if name else ""
    details += f'"group":"{group}",' if group else ""
    return (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        f'"message":"{qualified} \\"{name}\\" is invalid: {field}: {cause}","reason":"Invalid",'
        f'"details":{{{details}"kind":"{kind}","causes":[{{"reason":"FieldValueNotSupported",'
        f'"message":"{cause}","field":"{field}"}}]}},"code":422}}\n'
    ).encode()


def _service(name: str, kind: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"type": kind, "ports": [{"port": 80}]}}


async def test_unsupported_values_are_written_as_kube_writes_them(
    http: aiohttp.ClientSession,
) -> None:
    configmap = {"metadata": {"name": "ka-dry"}}
    cases = [
        (
            f"{NS}/services",
            _service("ka-svc", "Bogus"),
            _invalid(
                "Service",
                "ka-svc",
                "",
                "spec.type",
                f'Unsupported value: \\"Bogus\\": supported values: {SERVICE_TYPES}',
            ),
        ),
        (  # a named string type's value is written as JSON: Go's escapes
            f"{NS}/services",
            _service("ka-svc", 'a"b<c'),
            _invalid(
                "Service",
                "ka-svc",
                "",
                "spec.type",
                f'Unsupported value: \\"a\\\\\\"b\\\\u003cc\\": supported values: {SERVICE_TYPES}',
            ),
        ),
        (
            f"{NS}/configmaps?dryRun=Bogus",
            configmap,
            _invalid(
                "CreateOptions",
                "",
                "meta.k8s.io",
                "dryRun",
                'Unsupported value: [\\"Bogus\\"]: supported values: \\"All\\"',
            ),
        ),
        (
            f"{NS}/configmaps?dryRun=All&dryRun=Some",
            configmap,
            _invalid(
                "CreateOptions",
                "",
                "meta.k8s.io",
                "dryRun",
                'Unsupported value: [\\"All\\",\\"Some\\"]: supported values: \\"All\\"',
            ),
        ),
        (
            f"{NS}/configmaps?dryRun=%3Cx%3E",
            configmap,
            _invalid(
                "CreateOptions",
                "",
                "meta.k8s.io",
                "dryRun",
                'Unsupported value: [\\"\\\\u003cx\\\\u003e\\"]: supported values: \\"All\\"',
            ),
        ),
    ]
    for path, body, expected in cases:
        async with http.post(path, json=body) as response:
            assert await response.read() == expected, path


def _responses(operation: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """An operation's responses: each code's description and the schema it names."""
    answers = {}
    for code, answer in operation["responses"].items():
        schema: dict[str, Any] = answer.get("schema") or next(
            iter(answer.get("content", {}).values()), {}
        )
        schema = schema.get("schema", schema)
        answers[code] = (answer["description"], schema.get("$ref", "").rsplit(".", 1)[-1])
    return answers


CONFIGMAP = ("OK", "ConfigMap")
STATUS = ("OK", "Status")
UNAUTHORIZED = ("Unauthorized", "")
# kube's responses, v2 and v3 alike: (path under the group-version, method) -> answers
RESPONSES = {
    ("/namespaces/{namespace}/configmaps/{name}", "get"): {"200": CONFIGMAP, "401": UNAUTHORIZED},
    ("/namespaces/{namespace}/configmaps/{name}", "put"): {
        "200": CONFIGMAP,
        "201": ("Created", "ConfigMap"),
        "401": UNAUTHORIZED,
    },
    ("/namespaces/{namespace}/configmaps/{name}", "patch"): {
        "200": CONFIGMAP,
        "201": ("Created", "ConfigMap"),
        "401": UNAUTHORIZED,
    },
    ("/namespaces/{namespace}/configmaps/{name}", "delete"): {
        "200": STATUS,
        "202": ("Accepted", "Status"),
        "401": UNAUTHORIZED,
    },
    ("/namespaces/{namespace}/configmaps", "post"): {
        "200": CONFIGMAP,
        "201": ("Created", "ConfigMap"),
        "202": ("Accepted", "ConfigMap"),
        "401": UNAUTHORIZED,
    },
    ("/namespaces/{namespace}/configmaps", "delete"): {"200": STATUS, "401": UNAUTHORIZED},
    ("/namespaces/{namespace}/services/{name}", "delete"): {
        "200": ("OK", "Service"),
        "202": ("Accepted", "Service"),
        "401": UNAUTHORIZED,
    },
    ("/namespaces/{name}", "delete"): {
        "200": STATUS,
        "202": ("Accepted", "Status"),
        "401": UNAUTHORIZED,
    },
}


async def test_openapi_lists_kubes_responses(http: aiohttp.ClientSession) -> None:
    async with http.get("/openapi/v2") as response:
        v2 = orjson.loads(await response.read())
    async with http.get("/openapi/v3") as response:
        assert response.headers["Content-Type"] == "text/plain; charset=utf-8"
        url = orjson.loads(await response.read())["paths"]["api/v1"]["serverRelativeURL"]
    async with http.get(url) as response:
        v3 = orjson.loads(await response.read())
    for (path, method), expected in RESPONSES.items():
        assert _responses(v2["paths"][f"/api/v1{path}"][method]) == expected, (path, method)
        assert _responses(v3["paths"][f"/api/v1{path}"][method]) == expected, (path, method)
