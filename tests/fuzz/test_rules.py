"""The fuzzer's rules, without a system: what it takes for a violation (so
that the run can fail), what kube answers that it lets pass, and how it
bounds the watches it sends."""

from __future__ import annotations

import json

import pytest

from tests.fuzz.client import Answer, Request, Violation, check, first_value, too_large
from tests.fuzz.drafts import Context, Draft, request
from tests.fuzz.operations import Operation, Parameter, documented, undocumented

GET = Request(
    method="get", target="/api/v1/namespaces/a/configmaps/b", headers={}, body=None, watch=False
)


def _answer(status: int, body: object, content_type: str = "application/json") -> Answer:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Answer(status=status, content_type=content_type, body=raw, seconds=0.1)


def _status(code: int, **extra: object) -> dict[str, object]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, **extra}


@pytest.mark.parametrize(
    "answer",
    [
        _answer(500, _status(500)),
        _answer(503, _status(503)),
        _answer(400, {"kind": "Status", "code": 422}),
        _answer(404, {"message": "not found"}),
        _answer(400, b"bad request", "text/plain"),
        _answer(200, b"{", "application/json"),
        Answer(status=200, content_type="application/json", body=b"{}", seconds=10.5),
    ],
)
def test_what_breaks_the_rules(answer: Answer) -> None:
    with pytest.raises(Violation):
        check(GET, answer)


@pytest.mark.parametrize(
    "answer",
    [
        _answer(404, _status(404, reason="NotFound")),
        _answer(422, b"kind: Status\ncode: 422\n", "application/yaml"),
        _answer(404, b"404 page not found\n", "text/plain; charset=utf-8"),
        _answer(201, {"kind": "ConfigMap"}),
        _answer(200, b"", ""),
    ],
)
def test_what_keeps_them(answer: Answer) -> None:
    check(GET, answer)


def test_kube_s_504_for_a_resource_version_not_reached_is_told_apart() -> None:
    # kube's words (v1.36.2, a list at a resourceVersion 1000 past etcd's).
    cause = {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    body = _status(
        504,
        reason="Timeout",
        message="Timeout: Too large resource version: 1209, current: 221",
        details={"causes": [cause], "retryAfterSeconds": 1},
    )
    assert too_large(_answer(504, body))
    assert not too_large(_answer(504, _status(504, reason="Timeout")))
    assert not too_large(_answer(500, body))


LIST = Operation(
    method="get",
    path="/api/v1/namespaces/{namespace}/configmaps",
    action="list",
    parameters=(
        Parameter(name="namespace", where="path", type="string"),
        Parameter(name="watch", where="query", type="boolean"),
        Parameter(name="timeoutSeconds", where="query", type="integer"),
    ),
    kind=("v1", "ConfigMap"),
)
CONTEXT = Context(namespace="ns", targets={}, versions=["5"], continues=[""], definitions={})


def _draft(query: list[tuple[str, str | bytes]], tail: str = "") -> Draft:
    return Draft(
        operation=LIST,
        path={"namespace": "n s/"},
        query=query,
        tail=tail,
        body=None,
        accept=None,
        victim=False,
    )


def test_a_watch_must_end_only_when_its_timeout_says_so() -> None:
    short = request(_draft([("watch", "1"), ("timeoutSeconds", "1")]))
    assert short.watch and short.ends_within == 1.0
    assert short.target == "/api/v1/namespaces/n%20s%2F/configmaps?watch=1&timeoutSeconds=1"
    assert request(_draft([("watch", ""), ("timeoutSeconds", "0")])).ends_within is None
    assert request(_draft([("watch", "false")], tail="&watch")).watch is False
    assert request(_draft([], tail="&watch")).watch is True
    assert first_value("/x?a=%FF&a=2", "a") == "\ufffd"


def test_a_deletecollection_deletes_only_victims() -> None:
    wipe = Operation(
        method="delete",
        path="/api/v1/namespaces/{namespace}/configmaps",
        action="deletecollection",
        parameters=(),
    )
    draft = Draft(
        operation=wipe,
        path={"namespace": "ns"},
        query=[("labelSelector", "a=b")],
        tail="",
        body=None,
        accept=None,
        victim=False,
    )
    assert (
        request(draft).target
        == "/api/v1/namespaces/ns/configmaps?labelSelector=a%3Db%2Cfuzz-victim"
    )
    bare = Draft(
        operation=wipe,
        path={"namespace": "ns"},
        query=[],
        tail="",
        body=None,
        accept=None,
        victim=False,
    )
    assert request(bare).target.endswith("?labelSelector=fuzz-victim")


def test_the_operations_served_beside_the_document() -> None:
    document = {
        "paths": {
            "/api/v1/namespaces/{namespace}/serviceaccounts": {
                "parameters": [{"name": "namespace", "in": "path", "type": "string"}],
                "get": {"x-kubernetes-action": "list", "parameters": []},
            },
            "/api/v1/namespaces/{namespace}/serviceaccounts/{name}": {
                "parameters": [
                    {"name": "name", "in": "path", "type": "string"},
                    {"name": "namespace", "in": "path", "type": "string"},
                ],
                "get": {"x-kubernetes-action": "get"},
            },
        }
    }
    found = documented(document)
    added = {o.key for o in undocumented(found, [("/api/v1", "serviceaccounts/token", ["create"])])}
    assert added == {
        ("/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", "post"),
        ("/api/v1/watch/namespaces/{namespace}/serviceaccounts", "get"),
        ("/api/v1/watch/namespaces/{namespace}/serviceaccounts/{name}", "get"),
    }
