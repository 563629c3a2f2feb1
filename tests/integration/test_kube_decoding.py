"""kube's answers to what clients send it wrong, recorded from a real
kube-apiserver v1.36.2 (`../shared/kube/with_kube.sh python probe.py`, raw
HTTPS requests as the admin user): which kinds say "field label not
supported", ConfigMap binaryData that Go's base64 refuses, bodies kube's
decoder cannot read, continue tokens, a resourceVersion storage has not
reached, and the order of an object's keys. Each expected value is kube's
exact body (uids, timestamps and revisions aside)."""

from __future__ import annotations

import base64
import time

import aiohttp
import orjson
import pytest

NS = "/api/v1/namespaces/default"


def _bad_request(message: str) -> bytes:
    """kube's 400 Status, its message with Go's escapes of <, > and &."""
    escaped = orjson.dumps(message)
    for c, escape in ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026")):
        escaped = escaped.replace(c, escape)
    return (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        + escaped
        + b',"reason":"BadRequest","code":400}\n'
    )


NOT_KNOWN = '"foo" is not a known field selector: only "metadata.name", "metadata.namespace"'
# (list path, kube's message for fieldSelector=foo=bar)
FIELD_LABELS = [
    ("/api/v1/namespaces", "field label not supported: foo"),
    (f"{NS}/secrets", "field label not supported: foo"),
    (f"{NS}/services", "field label not supported: foo"),
    (f"{NS}/events", "field label not supported: foo"),
    (f"{NS}/configmaps", NOT_KNOWN),
    (f"{NS}/serviceaccounts", NOT_KNOWN),
    (f"{NS}/endpoints", NOT_KNOWN),
    ("/apis/coordination.k8s.io/v1/namespaces/default/leases", NOT_KNOWN),
    ("/apis/apps/v1/namespaces/default/deployments", NOT_KNOWN),
    ("/apis/rbac.authorization.k8s.io/v1/clusterroles", NOT_KNOWN),
    ("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", NOT_KNOWN),
    ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NOT_KNOWN),
]


@pytest.mark.parametrize("watch", [False, True])
@pytest.mark.parametrize(("path", "message"), FIELD_LABELS)
async def test_unknown_field_labels_as_kube_words_them(
    http: aiohttp.ClientSession, path: str, message: str, watch: bool
) -> None:
    params = {"fieldSelector": "foo=bar", **({"watch": "1"} if watch else {})}
    async with http.get(path, params=params) as response:
        assert await response.read() == _bad_request(message)


async def test_field_selectors_of_namespaces_and_secrets(http: aiohttp.ClientSession) -> None:
    """A Namespace has no metadata.namespace to select on; terms are checked
    in sorted order, the first unknown one named."""
    cases = [
        ("/api/v1/namespaces", "metadata.namespace=bar", "metadata.namespace"),
        (f"{NS}/secrets", "zzz=y,aaa=z", "aaa"),
    ]
    for path, selector, field in cases:
        async with http.get(path, params={"fieldSelector": selector}) as response:
            assert await response.read() == _bad_request(f"field label not supported: {field}")
    params = {"fieldSelector": "foo=y,metadata.name=a,bar=z"}
    async with http.get(f"{NS}/configmaps", params=params) as response:
        assert await response.read() == _bad_request(NOT_KNOWN.replace('"foo"', '"bar"'))
    params = {"fieldSelector": "metadata.name=default"}
    async with http.get("/api/v1/namespaces", params=params) as response:
        items = orjson.loads(await response.read())["items"]
        assert [item["metadata"]["name"] for item in items] == ["default"]


CONFIGMAP_CANNOT = 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
# (case, binaryData value, kube's answer: the value it stores, or the byte its 400 names)
BINARY_DATA: list[tuple[str, str, str | int]] = [
    ("space-after-padding", "aGk= ", 4),
    ("two-values-on-lines", "aGk=\naGk=", 5),
    ("lf-after-padding", "aGk=\n", "aGk="),
    ("crlf-inside", "aG\r\nk=", "aGk="),
    ("no-padding", "aGk", 0),
    ("one-char", "a", 0),
    ("bad-char", "ab$d", 2),
    ("extra-padding", "aGk==", 4),
    ("only-lf", "\n", ""),
    ("empty", "", ""),
]


@pytest.mark.parametrize(("case", "value", "kube"), BINARY_DATA)
async def test_configmap_binary_data_decodes_as_kube_does(
    http: aiohttp.ClientSession, case: str, value: str, kube: str | int
) -> None:
    name = f"kd-bd-{case}"
    configmap = {"metadata": {"name": name}, "binaryData": {"k": value}}
    async with http.post(f"{NS}/configmaps", json=configmap) as response:
        raw = await response.read()
    if isinstance(kube, int):
        message = f"{CONFIGMAP_CANNOT}illegal base64 data at input byte {kube}"
        assert raw == _bad_request(message)
        async with http.get(f"{NS}/configmaps/{name}") as response:
            assert response.status == 404  # nothing stored
        return
    assert orjson.loads(raw)["binaryData"] == {"k": kube}
    async with http.get(f"{NS}/configmaps/{name}") as response:
        assert orjson.loads(await response.read())["binaryData"] == {"k": kube}
    async with http.delete(f"{NS}/configmaps/{name}") as response:
        assert response.status == 200


async def test_configmap_binary_data_on_update(http: aiohttp.ClientSession) -> None:
    path = f"{NS}/configmaps/kd-bd-update"
    configmap = {"metadata": {"name": "kd-bd-update"}, "binaryData": {"k": "aGk="}}
    async with http.post(f"{NS}/configmaps", json=configmap) as response:
        assert response.status == 201
    async with http.put(path, json={**configmap, "binaryData": {"k": "aG k="}}) as response:
        message = f"{CONFIGMAP_CANNOT}illegal base64 data at input byte 2"
        assert await response.read() == _bad_request(message)
    both = {"k": "a", "j": "ab$d"}  # the first bad value, in the body's order
    async with http.put(path, json={**configmap, "binaryData": both}) as response:
        message = f"{CONFIGMAP_CANNOT}illegal base64 data at input byte 0"
        assert await response.read() == _bad_request(message)
    async with http.delete(path) as response:
        assert response.status == 200


UNRECOGNIZED = (
    "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; "
    "json parse error: "
)
TYPE_META = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)
LEGACY = 'in scheme "pkg/api/legacyscheme/scheme.go:30"'
# (resource, body, kube's message; those not naming a kind follow UNRECOGNIZED)
BODIES: list[tuple[str, bytes, str]] = [
    ("configmaps", b"hello", "invalid character 'h' looking for beginning of value (68656c6c6f)"),
    (
        "configmaps",
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"',
        'unexpected end of JSON input ({"apiVersion":"v1","kind":"Con ...)',
    ),
    ("configmaps", b"", "unexpected end of JSON input (<empty>)"),
    (
        "configmaps",
        b'[{"apiVersion":"v1","kind":"ConfigMap"}]',
        f"json: cannot unmarshal array into Go value of type {TYPE_META} "
        "(5b7b2261706956657273696f6e223a227631222c226b696e64223a22436f ...)",
    ),
    (
        "configmaps",
        b'"x"',
        f"json: cannot unmarshal string into Go value of type {TYPE_META} (227822)",
    ),
    ("configmaps", b"5", f"json: cannot unmarshal number into Go value of type {TYPE_META} (35)"),
    (
        "configmaps",
        b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bb-tr"}} x',
        'invalid character \'x\' after top-level value ({"apiVersion":"v1","kind":"Con ...)',
    ),
    (
        "configmaps",
        b'{"apiVersion":"v1","kind":5,"metadata":{"name":"x"}}',
        "json: cannot unmarshal number into Go struct field .kind of type string "
        '({"apiVersion":"v1","kind":5,"m ...)',
    ),
    (
        "configmaps",
        b'{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}',
        'Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to '
        "(core.ConfigMap): unknown conversion",
    ),
    (
        "configmaps",
        b'{"apiVersion":"v1","kind":"Foo","metadata":{"name":"x"}}',
        'Foo in version "v1" cannot be handled as a ConfigMap: no kind "Foo" is registered for '
        f'version "v1" {LEGACY}',
    ),
    (
        "configmaps",
        b'{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}',
        'ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is '
        f'registered for version "v2" {LEGACY}',
    ),
    (
        "configmaps",
        b'{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}',
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is '
        f'registered for version "apps/v1" {LEGACY}',
    ),
    ("deployments", b"hello", "invalid character 'h' looking for beginning of value (68656c6c6f)"),
    (
        "deployments",
        b'{"apiVersion":"apps/v1","kind":"Secret","metadata":{"name":"x"}}',
        'Secret in version "v1" cannot be handled as a Deployment: no kind "Secret" is '
        f'registered for version "apps/v1" {LEGACY}',
    ),
    (
        "deployments",
        b'{"apiVersion":"apps/v2","kind":"Deployment","metadata":{"name":"x"}}',
        'Deployment in version "v2" cannot be handled as a Deployment: no kind "Deployment" is '
        f'registered for version "apps/v2" {LEGACY}',
    ),
]


@pytest.mark.parametrize(("resource", "body", "message"), BODIES)
async def test_bodies_kube_cannot_read(
    http: aiohttp.ClientSession, resource: str, body: bytes, message: str
) -> None:
    kind, group = ("ConfigMap", "/api/v1")
    if resource == "deployments":
        kind, group = ("Deployment", "/apis/apps/v1")
    if " cannot be handled as a " not in message:
        message = UNRECOGNIZED.format(kind=kind) + message
    headers = {"Content-Type": "application/json"}
    path = f"{group}/namespaces/default/{resource}"
    async with http.post(path, data=body, headers=headers) as response:
        assert await response.read() == _bad_request(message)
    if resource == "configmaps":  # an update reads its body the same way
        async with http.put(f"{path}/x", data=body, headers=headers) as response:
            assert await response.read() == _bad_request(message)


async def test_a_body_without_kind_or_apiversion_takes_the_endpoints(
    http: aiohttp.ClientSession,
) -> None:
    for name, body in [
        ("kd-mk", {"apiVersion": "v1", "metadata": {"name": "kd-mk"}}),
        ("kd-ma", {"kind": "ConfigMap", "metadata": {"name": "kd-ma"}}),
        ("kd-mb", {"metadata": {"name": "kd-mb"}}),
    ]:
        async with http.post(f"{NS}/configmaps", json=body) as response:
            created = orjson.loads(await response.read())
            assert (response.status, created["kind"], created["apiVersion"]) == (
                201,
                "ConfigMap",
                "v1",
            )
        async with http.delete(f"{NS}/configmaps/{name}") as response:
            assert response.status == 200
    # null is Go's empty object: no name, so kube's 422.
    headers = {"Content-Type": "application/json"}
    async with http.post(f"{NS}/configmaps", data=b"null", headers=headers) as response:
        body = orjson.loads(await response.read())
        assert (response.status, body["message"]) == (
            422,
            'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is '
            "required",
        )


def _token(body: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(body)).decode().rstrip("=")


INVALID_TOKEN = "invalid continue token: continue key is not valid: "
V1 = "meta.k8s.io/v1"


async def test_continue_tokens_as_kube_reads_them(http: aiohttp.ClientSession) -> None:
    path = "/api/v1/namespaces/kube-public/configmaps"
    for i in range(4):
        async with http.post(path, json={"metadata": {"name": f"kd-ct{i}"}}) as response:
            assert response.status in (201, 409)
    async with http.get(path, params={"limit": "1"}) as response:
        page = orjson.loads(await response.read())
    token, rv = page["metadata"]["continue"], int(page["metadata"]["resourceVersion"])
    first = page["items"][0]["metadata"]["name"]
    # kube's own shape: the start key after a slash, then a NUL.
    assert base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)) == orjson.dumps(
        {"v": V1, "rv": rv, "start": f"/{first}\x00"}
    )
    refused = [
        ("abc", "invalid character 'i' looking for beginning of value"),
        ("!!!", "illegal base64 data at input byte 0"),
        ("aGVsbG8=", "illegal base64 data at input byte 7"),
        (token + "==", f"illegal base64 data at input byte {len(token)}"),
        (
            _token({"v": "x", "rv": rv, "start": "ct1"}),
            "server does not recognize this encoded version x",
        ),
        (
            _token({"v": V1, "rv": 0, "start": "ct1"}),
            f"incorrect encoded start resourceVersion (version {V1})",
        ),
        (_token({"v": V1, "rv": rv}), f"encoded start key empty (version {V1})"),
        (_token({"v": V1, "rv": rv, "start": "../secrets/x"}), "../secrets/x"),
        (
            _token({"v": V1, "rv": "5", "start": "ct1"}),
            "json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
        ),
    ]
    for bad, why in refused:
        async with http.get(path, params={"limit": "1", "continue": bad}) as response:
            assert await response.read() == _bad_request(INVALID_TOKEN + why), bad
    # Taken as kube takes them: a start key made by hand (with or without the
    # slash), a negative rv (the newest revision), another resource's token.
    names = []
    for start, token_rv in [("kd-ct1\x00", rv), ("/kd-ct1\x00", rv), ("kd-ct1\x00", -2)]:
        query = {"limit": "1", "continue": _token({"v": V1, "rv": token_rv, "start": start})}
        async with http.get(path, params=query) as response:
            page = orjson.loads(await response.read())
            names.append([item["metadata"]["name"] for item in page["items"]])
    assert names == [["kd-ct2"]] * 3
    async with http.get(f"{NS}/secrets", params={"limit": "1", "continue": token}) as response:
        assert response.status == 200


TOO_LARGE_END = (
    b',"reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge",'
    b'"message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}'
)


async def test_a_resource_version_not_reached_is_kubes_timeout(
    http: aiohttp.ClientSession,
) -> None:
    path = f"{NS}/configmaps"
    async with http.get(path) as response:
        future = int(orjson.loads(await response.read())["metadata"]["resourceVersion"]) + 10**6
    prefix = (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        b'"Timeout: Too large resource version: ' + str(future).encode() + b", current: "
    )
    for query in (
        f"resourceVersion={future}&resourceVersionMatch=NotOlderThan",
        f"resourceVersion={future}&resourceVersionMatch=Exact",
        f"limit=1&continue={_token({'v': V1, 'rv': future, 'start': 'x'})}",
    ):
        async with http.get(f"{path}?{query}") as response:
            raw = await response.read()
            assert (response.status, response.headers.get("Retry-After")) == (504, "1"), raw
            assert raw.startswith(prefix) and raw.endswith(TOO_LARGE_END + b"\n"), raw
    started = time.monotonic()
    query = "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    async with http.get(f"{path}?watch=1&resourceVersion={future}&{query}") as response:
        assert response.status == 200
        line = await response.content.readline()
    assert time.monotonic() - started < 15
    assert line.startswith(b'{"type":"ERROR","object":' + prefix)
    assert line.endswith(TOO_LARGE_END + b"}\n")


async def test_objects_lead_with_kind_as_kubes_do(http: aiohttp.ClientSession) -> None:
    """kube writes TypeMeta's kind before apiVersion, then metadata in
    ObjectMeta's order (name, namespace, uid, resourceVersion,
    creationTimestamp, ...), whatever order the request had."""
    body = {"metadata": {"name": "ka-order"}, "data": {"a": "b"}, "apiVersion": "v1"}
    path = f"{NS}/configmaps"
    answers = []
    async with http.post(path, json={**body, "kind": "ConfigMap"}) as response:
        answers.append(await response.read())
    async with http.get(f"{path}/ka-order") as response:
        answers.append(await response.read())
    async with http.get(path, params={"fieldSelector": "metadata.name=ka-order"}) as response:
        listed = await response.read()
        assert listed.startswith(b'{"kind":"ConfigMapList","apiVersion":"v1","metadata":{')
        answers.append(listed[listed.index(b'"items":[') + len(b'"items":[') :])
    params = {"fieldSelector": "metadata.name=ka-order", "watch": "1"}
    async with http.get(path, params=params) as response:
        event = await response.content.readline()
        answers.append(event.removeprefix(b'{"type":"ADDED","object":'))
    async with http.delete(f"{path}/ka-order") as response:
        assert response.status == 200
    for answer in answers:
        assert answer.startswith(
            b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"ka-order",'
            b'"namespace":"default","uid":"'
        ), answer
        meta = orjson.loads(answer[: answer.index(b',"data"')] + b"}")["metadata"]
        assert list(meta)[:5] == [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ]
