"""Bad input strata once answered with a 500 gets kube-apiserver v1.36's own
answer, word for word (recorded against a real one, probe30): a request's
Content-Encoding is not decoded; limit and timeoutSeconds are read as Go's
strconv.ParseInt reads them; a DeleteOptions body and a namespace's finalize
body of the wrong JSON types are refused in Go's decoder's words. Each bad
request leaves etcd as it was, and the system still answers /readyz."""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse
from typing import Any

import aiohttp
import orjson
import pytest

from strata.dev import System
from strata.etcd import Etcd
from tests.support.registry_tester import answer, configmap, new_namespace, refused

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
JSON = {"Content-Type": "application/json"}
# kube's 400 for a body it cannot read a kind from (the hex: its first 30 bytes).
UNRECOGNIZED = (
    "the object provided is unrecognized (must be of type ConfigMap): "
    "couldn't get version/kind; json parse error: "
)
NOT_COMPRESSED = b"this is not compressed at all {}"
# probe30's bodies, byte for byte: a ConfigMap gzipped and zlib-compressed.
GZIPPED = bytes.fromhex(
    "1f8b08000a5e0a6b02ffab564a2cc80c4b2d2acecccf53b252502a3354d25150cacecc4b01f19cf3f3d2"
    "32d37d130b4082b9a925892989258940896aa5bcc4dc54908af42aa5da5a0015e8f17345000000"
)
DEFLATED = bytes.fromhex(
    "789cab564a2cc80c4b2d2acecccf53b252502a3354d25150cacecc4b01f19cf3f3d232d37d130b4082b9"
    "a925892989258940896aa5bcc4dc54908af42aa5da5a00f1b91571"
)


async def _bad_request(
    http: aiohttp.ClientSession, etcd: Etcd, method: str, path: str, message: str, **kwargs: Any
) -> None:
    """The request is kube's bare 400 BadRequest with message (no details), and
    the system answers on."""
    body = await refused(http, etcd, method, path, **kwargs)
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }
    async with http.get("/readyz") as response:
        assert response.status == 200


@pytest.mark.parametrize(
    ("encoding", "sent", "problem"),
    [
        (
            "deflate",
            NOT_COMPRESSED,
            "invalid character 'h' in literal true (expecting 'r') "
            "(74686973206973206e6f7420636f6d7072657373656420617420616c6c20 ...)",
        ),
        (
            "gzip",
            NOT_COMPRESSED,
            "invalid character 'h' in literal true (expecting 'r') "
            "(74686973206973206e6f7420636f6d7072657373656420617420616c6c20 ...)",
        ),
        (
            "gzip",
            GZIPPED,
            "invalid character '\\x1f' looking for beginning of value "
            "(1f8b08000a5e0a6b02ffab564a2cc80c4b2d2acecccf53b252502a3354d2 ...)",
        ),
        (
            "deflate",
            DEFLATED,
            "invalid character 'x' looking for beginning of value "
            "(789cab564a2cc80c4b2d2acecccf53b252502a3354d25150cacecc4b01f1 ...)",
        ),
    ],
)
async def test_a_request_body_is_read_as_sent_whatever_its_content_encoding(
    http: aiohttp.ClientSession, system_etcd: Etcd, encoding: str, sent: bytes, problem: str
) -> None:
    headers = {**JSON, "Content-Encoding": encoding}
    message = UNRECOGNIZED + problem
    await _bad_request(http, system_etcd, "POST", CONFIGMAPS, message, data=sent, headers=headers)


async def test_a_plain_body_marked_brotli_is_created(http: aiohttp.ClientSession) -> None:
    namespace = await new_namespace(http, "encoding")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    sent = orjson.dumps(configmap("br"))
    headers = {**JSON, "Content-Encoding": "br"}
    created = await answer(http, "POST", path, 201, data=sent, headers=headers)
    assert created["metadata"]["name"] == "br"


@pytest.mark.parametrize(
    "metadata", [{}, {"name": ""}, None], ids=["no-name", "empty-name", "no-metadata"]
)
async def test_a_replacement_without_a_name_is_refused(
    http: aiohttp.ClientSession, system_etcd: Etcd, metadata: dict[str, str] | None
) -> None:
    """kube v1.36's checkName: a PUT body must name the object the URL does."""
    namespace = await new_namespace(http, "unnamed")
    path = f"/api/v1/namespaces/{namespace}/configmaps/c"
    await answer(http, "POST", path.rsplit("/", 1)[0], 201, json=configmap("c"))
    body: dict[str, object] = {"apiVersion": "v1", "kind": "ConfigMap"}
    if metadata is not None:
        body["metadata"] = metadata
    message = "the name of the object (c based on URL) was undeterminable: name must be provided"
    await _bad_request(http, system_etcd, "PUT", path, message, json=body)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("limit=99999999999999999999", 'parsing "99999999999999999999": value out of range'),
        ("limit=-99999999999999999999", 'parsing "-99999999999999999999": value out of range'),
        ("limit=9223372036854775808", 'parsing "9223372036854775808": value out of range'),
        ("limit=abc", 'parsing "abc": invalid syntax'),
        ("limit=", 'parsing "": invalid syntax'),
        ("limit=%201", 'parsing " 1": invalid syntax'),
        ("limit=1_0", 'parsing "1_0": invalid syntax'),
        ("limit=0x10", 'parsing "0x10": invalid syntax'),
        ("limit=1.5", 'parsing "1.5": invalid syntax'),
        ("limit=%22", 'parsing "\\"": invalid syntax'),
        ("limit=%C3%A9", 'parsing "é": invalid syntax'),
        ("limit=abc&limit=1", 'parsing "abc": invalid syntax'),
        (
            "timeoutSeconds=99999999999999999999",
            'parsing "99999999999999999999": value out of range',
        ),
        ("timeoutSeconds=abc", 'parsing "abc": invalid syntax'),
        # kube's ListOptions has timeoutSeconds before limit.
        ("limit=abc&timeoutSeconds=zzz", 'parsing "zzz": invalid syntax'),
        (
            "watch=1&timeoutSeconds=99999999999999999999",
            'parsing "99999999999999999999": value out of range',
        ),
    ],
)
async def test_int64_list_options_are_read_as_go_reads_them(
    http: aiohttp.ClientSession, system_etcd: Etcd, query: str, message: str
) -> None:
    path = f"{CONFIGMAPS}?{query}"
    await _bad_request(http, system_etcd, "GET", path, f"strconv.ParseInt: {message}")


async def test_a_delete_collection_reads_its_list_options_first(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    message = 'strconv.ParseInt: parsing "abc": invalid syntax'
    options = {"preconditions": "x"}
    path = f"{CONFIGMAPS}?limit=abc"
    await _bad_request(http, system_etcd, "DELETE", path, message, json=options)


async def test_a_grace_period_in_the_query_is_read_as_go_reads_it(
    http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    path = f"{CONFIGMAPS}/absent?gracePeriodSeconds=99999999999999999999"
    message = 'strconv.ParseInt: parsing "99999999999999999999": value out of range'
    await _bad_request(http, system_etcd, "DELETE", path, message)


async def test_a_negative_limit_is_no_limit(http: aiohttp.ClientSession) -> None:
    namespace = await new_namespace(http, "limits")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("a", "b", "c"):
        await answer(http, "POST", path, 201, json=configmap(name))
    for limit in ("-1", "-9223372036854775808", "%2B2"):
        listed = await answer(http, "GET", f"{path}?limit={limit}", 200)
        names = [item["metadata"]["name"] for item in listed["items"]]
        if limit == "%2B2":  # +2
            assert names == ["a", "b"] and listed["metadata"]["continue"]
        else:
            assert names == ["a", "b", "c"] and "continue" not in listed["metadata"]


@pytest.mark.parametrize("seconds", ["-1", "-5", "9223372036854775807"])
async def test_a_watch_past_its_deadline_is_one_error_event(
    http: aiohttp.ClientSession, seconds: str
) -> None:
    # 9223372036854775807 seconds is -1s once Go has made it a time.Duration.
    async with http.get(f"{CONFIGMAPS}?watch=1&timeoutSeconds={seconds}") as response:
        assert response.status == 200
        assert response.content_type == "application/json"
        sent = await response.read()
    assert sent == (
        b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},'
        b'"status":"Failure","message":"context deadline exceeded","reason":"InternalError",'
        b'"code":500}}\n'
    )


def _field(struct: str, field: str, given: str, go_type: str) -> str:
    return f"json: cannot unmarshal {given} into Go struct field {struct}.{field} of type {go_type}"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            b'{"preconditions":"x"}',
            _field("DeleteOptions", "preconditions", "string", "v1.Preconditions"),
        ),
        (
            b'{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":5}}',
            _field("Preconditions", "preconditions.uid", "number", "types.UID"),
        ),
        (
            b'{"propagationPolicy":5}',
            _field("DeleteOptions", "propagationPolicy", "number", "v1.DeletionPropagation"),
        ),
        (
            b'{"preconditions":{"resourceVersion":5,"uid":6}}',
            _field("Preconditions", "preconditions.resourceVersion", "number", "string"),
        ),
        # Go's first error in the body's order.
        (
            b'{"propagationPolicy":5,"preconditions":"x"}',
            _field("DeleteOptions", "propagationPolicy", "number", "v1.DeletionPropagation"),
        ),
        (
            b'{"gracePeriodSeconds":"5"}',
            _field("DeleteOptions", "gracePeriodSeconds", "string", "int64"),
        ),
        (
            b'{"gracePeriodSeconds":1.50}',
            _field("DeleteOptions", "gracePeriodSeconds", "number 1.50", "int64"),
        ),
        (
            b'{"gracePeriodSeconds":1e3}',
            _field("DeleteOptions", "gracePeriodSeconds", "number 1e3", "int64"),
        ),
        (
            b'{"gracePeriodSeconds":99999999999999999999}',
            _field("DeleteOptions", "gracePeriodSeconds", "number 99999999999999999999", "int64"),
        ),
        (
            b'{"gracePeriodSeconds":9223372036854775808}',
            _field("DeleteOptions", "gracePeriodSeconds", "number 9223372036854775808", "int64"),
        ),
        (
            b'{"orphanDependents":"true"}',
            _field("DeleteOptions", "orphanDependents", "string", "bool"),
        ),
        (b'{"dryRun":"All"}', _field("DeleteOptions", "dryRun", "string", "[]string")),
        (b'{"dryRun":["All",5]}', _field("DeleteOptions", "dryRun", "number", "string")),
        (
            b'{"preconditions":[]}',
            _field("DeleteOptions", "preconditions", "array", "v1.Preconditions"),
        ),
        (
            b"{bad",
            "couldn't get version/kind; json parse error: "
            "invalid character 'b' looking for beginning of object key string",
        ),
    ],
)
async def test_malformed_delete_options_are_refused_in_go_words(
    http: aiohttp.ClientSession, system_etcd: Etcd, options: bytes, message: str
) -> None:
    namespace = await new_namespace(http, "deletes")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await answer(http, "POST", path, 201, json=configmap("kept"))
    await _bad_request(
        http, system_etcd, "DELETE", f"{path}/kept", message, data=options, headers=JSON
    )
    # The same options refuse a delete of the collection.
    await _bad_request(http, system_etcd, "DELETE", path, message, data=options, headers=JSON)
    await answer(http, "GET", f"{path}/kept", 200)


async def test_options_of_the_right_types_or_null_delete(http: aiohttp.ClientSession) -> None:
    namespace = await new_namespace(http, "deletes")
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    await answer(http, "POST", path, 201, json=configmap("gone"))
    # kube matches fields exactly (Preconditions is no field) and a null is no value.
    options = b'{"Preconditions":"x","preconditions":null,"dryRun":null,"gracePeriodSeconds":0}'
    await answer(http, "DELETE", f"{path}/gone", 200, data=options, headers=JSON)
    await answer(http, "GET", f"{path}/gone", 404)


FINALIZER_NUMBER = _field("NamespaceSpec", "spec.finalizers", "number", "v1.FinalizerName")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"spec": {"finalizers": [1, True]}}, FINALIZER_NUMBER),
        ({"spec": {"finalizers": ["kubernetes", 1]}}, FINALIZER_NUMBER),
        (
            {"spec": {"finalizers": "x"}},
            _field("NamespaceSpec", "spec.finalizers", "string", "[]v1.FinalizerName"),
        ),
        ({"spec": "x"}, _field("Namespace", "spec", "string", "v1.NamespaceSpec")),
        (
            {"status": {"phase": 5}},
            _field("NamespaceStatus", "status.phase", "number", "v1.NamespacePhase"),
        ),
    ],
)
async def test_a_finalize_of_the_wrong_types_is_refused_as_kube_decodes_it(
    http: aiohttp.ClientSession, system_etcd: Etcd, fields: dict[str, Any], problem: str
) -> None:
    namespace = await new_namespace(http, "finalize")
    sent = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}, **fields}
    message = f'Namespace in version "v1" cannot be handled as a Namespace: {problem}'
    for path in (f"/api/v1/namespaces/{namespace}/finalize", f"/api/v1/namespaces/{namespace}"):
        await _bad_request(http, system_etcd, "PUT", path, message, json=sent)
    # The body is refused before the namespace is looked for, as in kube.
    missing = {**sent, "metadata": {"name": "no-such-namespace"}}
    path = "/api/v1/namespaces/no-such-namespace/finalize"
    await _bad_request(http, system_etcd, "PUT", path, message, json=missing)


async def test_large_headers_pass_as_kube_lets_them(http: aiohttp.ClientSession) -> None:
    """kube takes headers far past aiohttp's 8 KiB (up to 1 MiB): a 60 KiB header
    beside the admin's token is served, and a 60 KiB bearer token that is no
    one's is kube's 401, not a refusal of the request's size."""
    big = "x" * (60 * 1024)
    async with http.get("/api/v1/namespaces/default", headers={"X-Big": big}) as served:
        assert served.status == 200
    stranger = {"Authorization": f"Bearer {big}"}
    async with http.get("/api/v1/namespaces/default", headers=stranger) as refused_answer:
        assert refused_answer.status == 401
        assert (await refused_answer.json())["reason"] == "Unauthorized"
    async with http.get("/readyz") as response:
        assert response.status == 200


async def test_a_connection_holding_partial_headers_is_closed(system: System) -> None:
    """kube's ReadHeaderTimeout (32 s): a client that sends part of a request's
    headers and waits is disconnected, with no answer, instead of holding its
    connection (and a file of the gateway's) for ever; others are served meanwhile."""
    assert system.endpoints is not None
    url = urllib.parse.urlsplit(system.endpoints.gateway)
    context = ssl.create_default_context(cafile=str(system.ca_file))
    reader, writer = await asyncio.open_connection(
        url.hostname, url.port, ssl=context, server_hostname=url.hostname
    )
    try:
        writer.write(b"GET /readyz HTTP/1.1\r\nHost: strata\r\n")
        await writer.drain()
        # Well past 32 s, well short of aiohttp's own 75 s idle timeout.
        async with asyncio.timeout(60):
            answered = await reader.read()
        assert answered == b""  # closed, having said nothing
    finally:
        writer.close()
