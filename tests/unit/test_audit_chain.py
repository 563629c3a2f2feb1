"""The chain's audit steps on a real aiohttp server, with handlers of the
test's own: the events of a refused request (kube's, as recorded), of a bug
(Panic), of a watch whose client leaves, of the objects each level logs; the
Audit-ID a response carries is its events'; kube's audit metrics."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from prometheus_client import CollectorRegistry

from services.gateway import chain
from services.gateway.audit import AuditConfig, Auditor, policy
from services.gateway.authorizers import Attributes, Decision
from services.gateway.chain import authentication
from services.gateway.chain.metrics import RequestMetrics
from services.gateway.responses import json_response
from services.gateway.user import User
from strata.api import errors
from tests.support import audit_cases

ADMIN, BOB = "admin-token", "bob-token"
USERS = {
    ADMIN: User("admin", "uid-admin", ("system:masters", "system:authenticated")),
    BOB: User("bob", "uid-bob", ("system:authenticated",)),
}
CONFIGMAPS = "/api/v1/namespaces/a/configmaps"


class Lines:
    """The log's lines, kept in memory."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self._written = threading.Condition()

    def write_lines(self, lines: Sequence[bytes]) -> None:
        with self._written:
            self.lines.extend(lines)
            self._written.notify_all()

    def close(self) -> None:
        pass

    def _wait(self, count: int) -> None:
        with self._written:
            self._written.wait_for(lambda: len(self.lines) >= count, timeout=5)

    async def events(self, count: int) -> list[dict[str, Any]]:
        """The events once count are written (the writer is a thread)."""
        await asyncio.to_thread(self._wait, count)
        return [orjson.loads(line) for line in self.lines]


class OnlyAdmin:
    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        if attributes.user.name == "admin":
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""


async def _handler(request: web.Request) -> web.StreamResponse:
    """Configmaps, more or less: what the audit steps see of a handler."""
    name = request.path.rpartition("/")[2]
    if name == "boom":
        raise RuntimeError("boom")
    if name == "missing":
        raise errors.not_found("configmaps", "missing")
    if "watch" in request.query:
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b'{"type":"ADDED","object":{}}\n')
        await asyncio.sleep(60)  # until the client leaves
        return response
    if request.method == "DELETE":
        return json_response(orjson.dumps(errors.success("configmaps", name, "u1")))
    if request.method in ("POST", "PUT", "PATCH"):
        await request.read()
        meta = {"name": "c", "uid": "u1", "managedFields": [{"manager": "m"}]}
        created = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": meta}
        return json_response(orjson.dumps(created), 201 if request.method == "POST" else 200)
    return json_response(b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"}}')


async def _serve(
    rules: list[dict[str, Any]], **top: Any
) -> tuple[TestServer, Lines, CollectorRegistry]:
    document = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": rules, **top}
    sink, registry = Lines(), CollectorRegistry()
    auditor = Auditor(AuditConfig(policy.parse(document), sink), registry)
    app = web.Application(
        middlewares=chain.middlewares(
            metrics=RequestMetrics(),
            authenticate=authentication.authenticator("unused", USERS),
            authorizer=OnlyAdmin(),
            bounds=chain.Limits(),
            auditor=auditor,
        )
    )
    chain.install_hooks(app, auditor)
    app.router.add_route("*", "/api/{tail:.+}", _handler)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server, sink, registry


@pytest.fixture
async def audited() -> AsyncIterator[tuple[aiohttp.ClientSession, Lines, CollectorRegistry]]:
    """Everything at RequestResponse, but /api/v1/namespaces/b's at Request
    without managed fields and with no RequestReceived."""
    server, sink, registry = await _serve(
        [
            {
                "level": "Request",
                "namespaces": ["b"],
                "omitStages": ["RequestReceived"],
                "omitManagedFields": True,
            },
            {"level": "RequestResponse", "resources": [{"resources": ["configmaps"]}]},
        ]
    )
    base = str(server.make_url(""))
    async with aiohttp.ClientSession(base_url=base, headers={"User-Agent": "t/1"}) as session:
        yield session, sink, registry
    await server.close()


def _as(token: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "User-Agent": audit_cases.AGENT, **headers}


async def test_a_refused_request_has_kubes_events(audited: Any) -> None:
    session, sink, _ = audited
    path = f"{audit_cases.CONFIGMAPS}/c1"
    async with session.get(path, headers=_as(BOB)) as answer:
        assert answer.status == 403
        ids = {"forbidden get": answer.headers["Audit-ID"]}
    await sink.events(2)
    found = audit_cases.by_step(sink.lines, ids)
    expected = audit_cases.recorded()["forbidden get"]
    assert [orjson.dumps(e) for e in found["forbidden get"]] == [orjson.dumps(e) for e in expected]


async def test_a_bug_is_a_panic_event(audited: Any) -> None:
    session, sink, _ = audited
    async with session.get(f"{CONFIGMAPS}/boom", headers=_as(ADMIN)) as answer:
        assert answer.status == 500
    received, panic = await sink.events(2)
    assert (received["stage"], panic["stage"]) == ("RequestReceived", "Panic")
    assert panic["responseStatus"] == {
        "metadata": {},
        "status": "Failure",
        "message": "APIServer panic'd: boom",
        "reason": "InternalError",
        "code": 500,
    }


async def test_a_watch_whose_client_leaves(audited: Any) -> None:
    session, sink, _ = audited
    answer = await session.get(f"{CONFIGMAPS}?watch=1", headers=_as(ADMIN))
    await answer.content.readline()
    answer.close()
    events = await sink.events(3)
    assert [e["stage"] for e in events] == [
        "RequestReceived",
        "ResponseStarted",
        "ResponseComplete",
    ]
    assert [e["responseStatus"] for e in events[1:]] == [{"metadata": {}, "code": 200}] * 2
    assert "responseObject" not in events[2]


async def test_the_objects_each_level_logs(audited: Any) -> None:
    session, sink, _ = audited
    body = {"metadata": {"name": "c", "managedFields": [{"manager": "x"}]}, "data": {"k": "v"}}
    headers = _as(ADMIN, **{"Audit-ID": "mine"})
    async with session.post("/api/v1/namespaces/b/configmaps", json=body, headers=headers) as a:
        assert a.headers["Audit-ID"] == "mine"
    (created,) = await sink.events(1)  # Request level, RequestReceived omitted
    assert created["auditID"] == "mine"
    assert created["objectRef"] == {
        "resource": "configmaps",
        "namespace": "b",
        "name": "c",
        "apiVersion": "v1",
    }
    assert created["requestObject"] == {"metadata": {"name": "c"}, "data": {"k": "v"}}
    assert "responseObject" not in created


async def test_a_deletes_options_and_status_and_an_applys_yaml(audited: Any) -> None:
    session, sink, _ = audited
    options = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "x": 1}
    async with session.delete(f"{CONFIGMAPS}/c", json=options, headers=_as(ADMIN)):
        pass
    apply = _as(ADMIN, **{"Content-Type": "application/apply-patch+yaml"})
    async with session.patch(f"{CONFIGMAPS}/c", data="data:\n  a: b\n", headers=apply):
        pass
    _, deleted, _, applied = await sink.events(4)
    assert deleted["requestObject"] == {
        "kind": "DeleteOptions",
        "apiVersion": "meta.k8s.io/__internal",
        "gracePeriodSeconds": 0,
    }
    assert deleted["responseStatus"] == {
        "metadata": {},
        "status": "Success",
        "details": {"name": "c", "kind": "configmaps", "uid": "u1"},
        "code": 200,
    }
    assert applied["requestObject"] == {"data": {"a": "b"}}
    assert applied["responseObject"]["metadata"]["managedFields"] == [{"manager": "m"}]


async def test_a_request_no_rule_audits_has_no_events_and_metrics_count(audited: Any) -> None:
    session, sink, registry = audited
    async with session.get("/api/v1/namespaces/a/pods", headers=_as(ADMIN)) as answer:
        assert answer.headers["Audit-ID"]
    async with session.get(f"{CONFIGMAPS}/missing", headers=_as(ADMIN)):
        pass
    _, completed = await sink.events(2)
    assert completed["responseStatus"]["reason"] == "NotFound"
    assert completed["responseObject"]["kind"] == "Status"
    assert registry.get_sample_value("apiserver_audit_event_total") == 2
    assert registry.get_sample_value("apiserver_audit_level_total", {"level": "None"}) == 1
    assert (
        registry.get_sample_value("apiserver_audit_level_total", {"level": "RequestResponse"}) == 1
    )
