"""Bodies that are expensive to read get kube-apiserver v1.36's answers, word
for word (recorded against a real one, probe30 sections 1 and 2), and leave
the system answering: YAML whose aliases expand a little text into a great
deal ("billion laughs") is refused by go-yaml's alias ratio rule; JSON nested
past Go's 10,000 levels is refused in Go's words; patches nested 1,000 deep
whose result kube cannot decode are its 422, which quotes the whole patched
object. After each, /readyz answers 200 and another request is served."""

from __future__ import annotations

import io
from typing import Any

import aiohttp
import orjson
import pytest

from strata.api.goquote import quote
from strata.etcd import Etcd
from tests.support.registry_tester import answer, new_namespace, refused

YAML = {"Content-Type": "application/yaml"}
JSON = {"Content-Type": "application/json"}
MERGE = {"Content-Type": "application/merge-patch+json"}
STRATEGIC = {"Content-Type": "application/strategic-merge-patch+json"}
JSON_PATCH = {"Content-Type": "application/json-patch+json"}
APPLY = {"Content-Type": "application/apply-patch+yaml"}
HEADER = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"
# kube's 400 for a YAML body go-yaml refuses whole: the hex is the body's first
# 30 bytes ("apiVersion: v1\nkind: ConfigMap").
EXCESSIVE = "yaml: document contains excessive aliasing"
ALIASING = (
    f"the object provided is unrecognized (must be of type ConfigMap): {EXCESSIVE} "
    "(61706956657273696f6e3a2076310a6b696e643a20436f6e6669674d6170 ...)"
)
UNRECOGNIZED = (
    "the object provided is unrecognized (must be of type ConfigMap): "
    "couldn't get version/kind; json parse error: "
)
DATA_TYPE = "json: cannot unmarshal object into Go struct field ConfigMap.data of type string"
LABELS_TYPE = (
    "json: cannot unmarshal object into Go struct field ObjectMeta.metadata.labels of type string"
)


def laughs(levels: int, per: int, leaf: str = '"x"', indent: str = "") -> str:
    """probe30's alias bombs: a list of leaves, then lists of aliases of the last."""
    names = "abcdefghijklmnop"
    lines = [f"{indent}a: &a [" + ",".join([leaf] * per) + "]\n"]
    for i in range(1, levels):
        aliases = ",".join([f"*{names[i - 1]}"] * per)
        lines.append(f"{indent}{names[i]}: &{names[i]} [{aliases}]\n")
    return "".join(lines)


def list100(aliases: int) -> bytes:
    """A list of 100 leaves aliased in another list, at the top level."""
    return (
        HEADER.format(name=f"modest{aliases}")
        + "a: &a ["
        + ",".join(['"x"'] * 100)
        + "]\nb: ["
        + ",".join(["*a"] * aliases)
        + "]\n"
    ).encode()


def nest(key: str, depth: int, leaf: str = '"v"') -> str:
    return f'{{"{key}":' * depth + leaf + "}" * depth


async def healthy(http: aiohttp.ClientSession, path: str) -> None:
    """The system still answers: /readyz, and another request."""
    async with http.get("/readyz") as response:
        assert response.status == 200
    async with http.get(path) as response:
        assert response.status == 200


async def bad_request(
    http: aiohttp.ClientSession, etcd: Etcd, method: str, path: str, message: str, **kwargs: Any
) -> None:
    """kube's bare 400 BadRequest with message, etcd untouched, the system on."""
    body = await refused(http, etcd, method, path, **kwargs)
    assert (body["code"], body["reason"], body["message"]) == (400, "BadRequest", message)
    assert "details" not in body
    await healthy(http, path.rsplit("/", 1)[0] if method == "PATCH" else path)


@pytest.fixture(scope="module")
async def namespace(http: aiohttp.ClientSession) -> str:
    return await new_namespace(http, "deep")


@pytest.mark.parametrize(
    "body",
    [
        HEADER.format(name="laughs-data") + "data:\n" + laughs(9, 9, indent="  "),
        HEADER.format(name="laughs-top") + laughs(9, 9),
        HEADER.format(name="lol") + "data:\n" + laughs(9, 9, leaf='"lol"', indent="  "),
        HEADER.format(name="bomb6x9") + laughs(6, 9, leaf='"xxxxxxxxxx"'),
        HEADER.format(name="bomb1000")
        + "a: &a ["
        + ",".join(['"xxxxxxxxxx"'] * 1000)
        + "]\nb: &b ["
        + ",".join(["*a"] * 1000)
        + "]\n",
        list100(4000).decode(),
        list100(5000).decode(),
    ],
    ids=["laughs-data", "laughs-top", "lol", "6x9", "1000x1000", "list100x4000", "list100x5000"],
)
async def test_yaml_alias_bombs_are_refused(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str, body: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for query in ("", "?fieldValidation=Strict"):
        await bad_request(
            http, system_etcd, "POST", path + query, ALIASING, data=body.encode(), headers=YAML
        )


async def test_yaml_aliases_below_the_ratio_are_read(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """kube took a list of 100 aliased 3,900 times (refusing 4,000), warning of
    the unknown fields, and stores a scalar's aliases expanded."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    async with http.post(path, data=list100(3900), headers=YAML) as response:
        assert response.status == 201
        assert response.headers.getall("Warning") == [
            '299 - "unknown field \\"a\\""',
            '299 - "unknown field \\"b\\""',
        ]
    scalar = "y" * 1000
    body = HEADER.format(name="scalar-alias") + f"data:\n  k0: &s {scalar}\n"
    body += "".join(f"  k{i}: *s\n" for i in range(1, 301))
    created = await answer(http, "POST", path, 201, data=body.encode(), headers=YAML)
    assert created["data"] == {f"k{i}": scalar for i in range(301)}


async def test_yaml_alias_bombs_in_patches(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    """An apply's configuration is refused in its field manager's words; a
    PATCH of application/yaml is no patch type at all."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    bomb = (HEADER.format(name="lol") + "data:\n" + laughs(9, 9, '"lol"', "  ")).encode()
    message = f"error decoding YAML: error converting YAML to JSON: {EXCESSIVE}"
    await bad_request(
        http, system_etcd, "PATCH", f"{path}/lol?fieldManager=m", message, data=bomb, headers=APPLY
    )
    body = await refused(http, system_etcd, "PATCH", f"{path}/x", data=bomb, headers=YAML)
    assert (body["code"], body["reason"], body["message"]) == (
        415,
        "UnsupportedMediaType",
        "415: Unsupported Media Type",
    )
    await healthy(http, path)


def deep_create(name: str, field: str, depth: int, key: str = "x") -> bytes:
    head = f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"{field}":'
    return (head + nest(key, depth) + "}").encode()


@pytest.mark.parametrize(
    ("body", "bracket"),
    [
        (deep_create("deep10000", "data", 10000), "{"),
        (deep_create("deeptop10000", "zz", 10000), "{"),
        (
            b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deeparr"},"zz":'
            + b"[" * 10000
            + b"]" * 10000
            + b"}",
            "[",
        ),
    ],
    ids=["data", "unknown-field", "arrays"],
)
async def test_json_past_gos_depth_is_refused_on_create(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str, body: bytes, bracket: str
) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    message = UNRECOGNIZED + f"invalid character '{bracket}' exceeded max depth "
    message += '({"apiVersion":"v1","kind":"Con ...)'
    await bad_request(http, system_etcd, "POST", path, message, data=body, headers=JSON)


async def test_deep_json_below_gos_depth_is_read(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    """Nested 1,000 deep: a ConfigMap's data of the wrong type is kube's 400,
    an unknown field is dropped with kube's warning."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    message = f'ConfigMap in version "v1" cannot be handled as a ConfigMap: {DATA_TYPE}'
    body = deep_create("deep1000", "data", 1000)
    await bad_request(http, system_etcd, "POST", path, message, data=body, headers=JSON)
    for depth in (1000, 9999):  # orjson's depth, and past it
        body = deep_create(f"deeptop{depth}", "zz", depth)
        async with http.post(path, data=body, headers=JSON) as response:
            assert response.status == 201
            assert response.headers.getall("Warning") == ['299 - "unknown field \\"zz\\""']
    await healthy(http, path)


async def target(http: aiohttp.ClientSession, namespace: str, name: str) -> tuple[str, Any]:
    """A ConfigMap with data {k: v}: its path, and the object as stored."""
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}
    await answer(http, "POST", path, 201, json=body)
    return f"{path}/{name}", await answer(http, "GET", f"{path}/{name}", 200)


@pytest.mark.parametrize("headers", [MERGE, STRATEGIC], ids=["merge", "strategic"])
@pytest.mark.parametrize("field", ["labels", "data"])
async def test_patches_past_gos_depth_are_refused(
    http: aiohttp.ClientSession,
    system_etcd: Etcd,
    namespace: str,
    headers: dict[str, str],
    field: str,
) -> None:
    path, _ = await target(http, namespace, f"past-{field}-{headers is MERGE}".lower())
    patch = nest("a", 10000) if field == "labels" else nest("x", 10000)
    body = (
        '{"metadata":{"labels":' + patch + "}}" if field == "labels" else '{"data":' + patch + "}"
    )
    message = "invalid character '{' exceeded max depth"
    if headers is MERGE:
        message = "error decoding patch: " + message
    await bad_request(
        http, system_etcd, "PATCH", path, message, data=body.encode(), headers=headers
    )


def compact(value: Any) -> str:
    return orjson.dumps(value).decode()


def go_object(members: list[tuple[str, str]]) -> str:
    """A JSON object of members' (key, JSON text), in that order."""
    return "{" + ",".join(f"{compact(k)}:{v}" for k, v in members) + "}"


async def patch_invalid(
    http: aiohttp.ClientSession, etcd: Etcd, path: str, body: str, headers: dict[str, str]
) -> tuple[str, str]:
    """kube's 422 for a patch whose result its decoder cannot read: the quoted
    value and the error its one cause gives."""
    refusal = await refused(http, etcd, "PATCH", path, data=body.encode(), headers=headers)
    assert (refusal["code"], refusal["reason"]) == (422, "Invalid")
    [cause] = refusal["details"]["causes"]
    assert set(refusal["details"]) == {"causes"}
    assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", "patch")
    assert refusal["message"] == f' "" is invalid: patch: {cause["message"]}'
    value, _, error = cause["message"].removeprefix("Invalid value: ").rpartition('": ')
    await healthy(http, path)
    return value + '"', error


async def test_merge_patches_1000_deep_are_kubes_422(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    """The whole patched object is quoted as kube's merge patch writes it: the
    document and the maps the patch reached with sorted keys, the rest (here
    metadata, for data) as stored."""
    path, stored = await target(http, namespace, "merge-data")
    labels, data = nest("a", 1000), nest("x", 1000)
    metadata = [(k, compact(v)) for k, v in stored["metadata"].items()]
    value, error = await patch_invalid(http, system_etcd, path, '{"data":' + data + "}", MERGE)
    merged_data = '{"k":"v","x":' + data.removeprefix('{"x":')
    expected = go_object(
        [
            ("apiVersion", '"v1"'),
            ("data", merged_data),
            ("kind", '"ConfigMap"'),
            ("metadata", go_object(metadata)),
        ]
    )
    assert (value, error) == (quote(expected), DATA_TYPE)

    path, stored = await target(http, namespace, "merge-labels")
    metadata = [(k, compact(v)) for k, v in stored["metadata"].items()]
    body = '{"metadata":{"labels":' + labels + "}}"
    value, error = await patch_invalid(http, system_etcd, path, body, MERGE)
    expected = go_object(
        [
            ("apiVersion", '"v1"'),
            ("data", '{"k":"v"}'),
            ("kind", '"ConfigMap"'),
            ("metadata", go_object(sorted([*metadata, ("labels", labels)]))),
        ]
    )
    assert (value, error) == (quote(expected), LABELS_TYPE)


async def test_strategic_merge_patches_1000_deep_are_kubes_422(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    """A strategic merge patch's 422 quotes the patch as Go prints its map,
    with the unstructured converter's words."""
    path, _ = await target(http, namespace, "strategic")
    for field, key in (("data", "x"), ("labels", "a")):
        printed = f"map[{key}:" * 1000 + "v" + "]" * 1000
        body = '{"data":' + nest("x", 1000) + "}"
        shown = f"map[data:{printed}]"
        if field == "labels":
            body = '{"metadata":{"labels":' + nest("a", 1000) + "}}"
            shown = f"map[metadata:map[labels:{printed}]]"
        value, error = await patch_invalid(http, system_etcd, path, body, STRATEGIC)
        assert (value, error) == (quote(shown), "unrecognized type: string")


async def test_json_patch_1000_deep_is_kubes_422(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    path, stored = await target(http, namespace, "json-patch")
    value = nest("x", 1000, "1")
    body = '[{"op":"add","path":"/data/z","value":' + value + "}]"
    quoted, error = await patch_invalid(http, system_etcd, path, body, JSON_PATCH)
    metadata = [(k, compact(v)) for k, v in stored["metadata"].items()]
    expected = go_object(
        [
            ("apiVersion", '"v1"'),
            ("data", '{"k":"v","z":' + value + "}"),
            ("kind", '"ConfigMap"'),
            ("metadata", go_object(metadata)),
        ]
    )
    assert (quoted, error) == (quote(expected), DATA_TYPE)


async def test_deep_patches_of_unknown_fields_are_applied(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """A deep value under a field the kind does not have is dropped, with
    kube's warning, whatever the patch type."""
    path, _ = await target(http, namespace, "unknown")
    for headers, body in (
        (MERGE, '{"zz":' + nest("x", 1000) + "}"),
        (STRATEGIC, '{"zz":' + nest("x", 1000) + "}"),
        (JSON_PATCH, '[{"op":"add","path":"/zz","value":' + nest("x", 1000) + "}]"),
    ):
        async with http.patch(path, data=body.encode(), headers=headers) as response:
            assert response.status == 200
            assert response.headers.getall("Warning") == ['299 - "unknown field \\"zz\\""']
            assert "zz" not in orjson.loads(await response.read())
    await healthy(http, path)


async def test_deep_applied_configuration_is_a_500(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    """kube's field manager cannot type a configuration nested 1,000 deep and
    answers a plain 500 (no reason); strata refuses before its walks, naming
    the depth instead of the first field that is not one."""
    path, _ = await target(http, namespace, "apply")
    body = deep_create("apply", "data", 1000)
    refusal = await refused(
        http, system_etcd, "PATCH", f"{path}?fieldManager=p", data=body, headers=APPLY
    )
    assert refusal["code"] == 500 and "reason" not in refusal and "details" not in refusal
    assert refusal["message"] == (
        "failed to create typed patch object (/apply; /v1, Kind=ConfigMap): "
        "the configuration nests more than 100 levels deep"
    )
    await healthy(http, path)


async def test_megabytes_of_brackets_are_refused_in_gos_words(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    """Nearly the largest body the gateway takes, all brackets."""
    path, _ = await target(http, namespace, "brackets")
    brackets = b"[" * 1_500_000 + b"]" * 1_500_000
    message = UNRECOGNIZED + "invalid character '[' exceeded max depth "
    message += f"({brackets[:30].hex()} ...)"
    collection = path.rsplit("/", 1)[0]
    sent = io.BytesIO(brackets)  # aiohttp streams a large body
    await bad_request(http, system_etcd, "POST", collection, message, data=sent, headers=JSON)
    body = b'{"data":' + brackets + b"}"
    for headers, prefix in ((MERGE, "error decoding patch: "), (STRATEGIC, "")):
        message = prefix + "invalid character '[' exceeded max depth"
        sent = io.BytesIO(body)
        await bad_request(http, system_etcd, "PATCH", path, message, data=sent, headers=headers)
