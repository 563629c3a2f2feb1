"""The gateway's filters around every request, on a real aiohttp server with
handlers held in flight on purpose: in-flight limits (429 + Retry-After; watches,
the health probes and system:masters exempt, as kube's exempt priority level),
kube's request metric labels, and Audit-ID."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from prometheus_client import generate_latest

from services.gateway.chain.audit import audit_id
from services.gateway.chain.limits import InFlight
from services.gateway.chain.metrics import RequestMetrics
from services.gateway.chain.status import render_status
from services.gateway.chain.timeouts import timeouts
from services.gateway.user import USER, User

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _superuser_when_asked(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Stands in for authentication: X-Superuser makes the request system:masters'."""
    if "X-Superuser" in request.headers:
        request[USER] = User("admin", "", ("system:masters", "system:authenticated"))
    return await handler(request)


async def _ready(_: web.Request) -> web.Response:
    return web.Response(text="ok")


class Held:
    """Handlers that wait until released, so requests stay in flight."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = 0

    async def handle(self, _: web.Request) -> web.Response:
        self.entered += 1
        await self.release.wait()
        return web.Response(text="{}", content_type="application/json")


@pytest.fixture
async def served() -> AsyncIterator[tuple[aiohttp.ClientSession, Held, RequestMetrics]]:
    metrics = RequestMetrics()
    limits = InFlight(metrics, read_only=2, mutating=1)
    app = web.Application(
        middlewares=[
            metrics.middleware,
            render_status,
            _superuser_when_asked,
            limits.middleware,
            timeouts(30),
        ]
    )
    app.on_response_prepare.append(audit_id)
    held = Held()
    app.router.add_route("*", "/api/{tail:.+}", held.handle)
    app.router.add_route("*", "/apis/{tail:.+}", held.handle)
    app.router.add_get("/readyz", _ready)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    async with aiohttp.ClientSession(base_url=str(server.make_url(""))) as session:
        yield session, held, metrics
    held.release.set()
    await server.close()


async def _entered(held: Held, count: int) -> None:
    async with asyncio.timeout(5):
        while held.entered < count:  # noqa: ASYNC110 - counting handler entries
            await asyncio.sleep(0.01)


async def test_requests_past_the_limit_get_429_and_watches_do_not_count(
    served: tuple[aiohttp.ClientSession, Held, RequestMetrics],
) -> None:
    session, held, _ = served
    path = "/api/v1/namespaces/a/configmaps"
    reads = [asyncio.create_task(session.get(path)) for _ in range(2)]
    write = asyncio.create_task(session.post(path, data=b"{}"))
    watch = asyncio.create_task(session.get(f"{path}?watch=1"))
    await _entered(held, 4)
    async with session.get(path) as refused:
        assert refused.status == 429
        assert refused.headers["Retry-After"] == "1"
        status = await refused.json()
        assert (status["reason"], status["message"]) == (
            "TooManyRequests",
            "Too many requests, please try again later.",
        )
    async with session.delete(f"{path}/x") as refused:
        assert refused.status == 429
    # Exempt, as kube's exempt priority level: the probes and the superuser group.
    async with session.get("/readyz") as probe:
        assert probe.status == 200
    superuser = asyncio.create_task(session.get(path, headers={"X-Superuser": "1"}))
    await _entered(held, 5)
    held.release.set()
    response = await superuser
    assert response.status == 200
    response.release()
    for task in (*reads, write, watch):
        response = await task
        assert response.status == 200
        response.release()
    async with session.get(path) as again:
        assert again.status == 200


async def test_metrics_carry_kubes_labels_and_responses_an_audit_id(
    served: tuple[aiohttp.ClientSession, Held, RequestMetrics],
) -> None:
    session, held, metrics = served
    held.release.set()
    calls = [
        ("GET", "/api/v1/namespaces/a/configmaps", {}),
        ("GET", "/api/v1/namespaces/a/configmaps/x", {}),
        ("GET", "/api/v1/configmaps?watch=true", {}),
        ("DELETE", "/api/v1/namespaces/a/configmaps", {}),
        ("PATCH", "/apis/apps/v1/namespaces/a/deployments/d/scale?dryRun=All", {}),
        (
            "PATCH",
            "/api/v1/namespaces/a/configmaps/x",
            {"Content-Type": "application/apply-patch+yaml"},
        ),
    ]
    for method, path, headers in calls:
        async with session.request(method, path, headers=headers, data=b"{}") as response:
            assert response.status == 200
            assert len(response.headers["Audit-ID"]) == 36
    async with session.get("/api/v1/namespaces", headers={"Audit-ID": "mine"}) as response:
        assert response.headers["Audit-ID"] == "mine"
    registry = metrics.registry
    for verb, resource, scope, group, subresource, dry_run in (
        ("LIST", "configmaps", "namespace", "", "", ""),
        ("GET", "configmaps", "resource", "", "", ""),
        ("WATCH", "configmaps", "cluster", "", "", ""),
        ("DELETECOLLECTION", "configmaps", "namespace", "", "", ""),
        ("PATCH", "deployments", "resource", "apps", "scale", "All"),
        ("APPLY", "configmaps", "resource", "", "", ""),
    ):
        labels = {
            "verb": verb,
            "dry_run": dry_run,
            "group": group,
            "version": "v1",
            "resource": resource,
            "subresource": subresource,
            "scope": scope,
            "component": "apiserver",
        }
        count = registry.get_sample_value("apiserver_request_total", {**labels, "code": "200"})
        assert count == 1.0, labels
        timed = registry.get_sample_value("apiserver_request_duration_seconds_count", labels)
        # Watches are long-running: counted, not timed.
        assert timed == (None if verb == "WATCH" else 1.0), labels
    assert (
        registry.get_sample_value(
            "apiserver_current_inflight_requests", {"request_kind": "readOnly"}
        )
        == 0.0
    )
    text = generate_latest(registry).decode()
    assert "# TYPE apiserver_longrunning_requests gauge" in text


async def test_a_request_past_its_timeout_is_504_and_watches_have_none(
    served: tuple[aiohttp.ClientSession, Held, RequestMetrics],
) -> None:
    session, held, metrics = served
    path = "/api/v1/namespaces/a/configmaps"
    async with session.get(f"{path}?timeout=100ms") as response:
        assert response.status == 504
        status = await response.json()
    assert (status["reason"], status["message"]) == (
        "Timeout",
        "Timeout: request did not complete within requested timeout - context deadline exceeded",
    )
    watch = asyncio.create_task(session.get(f"{path}?watch=1&timeout=100ms"))
    await _entered(held, 2)
    await asyncio.sleep(0.3)
    assert not watch.done()  # a watch outlives any request timeout
    held.release.set()
    async with await watch as response:
        assert response.status == 200
    count = metrics.registry.get_sample_value(
        "apiserver_request_total",
        {
            "verb": "LIST",
            "dry_run": "",
            "group": "",
            "version": "v1",
            "resource": "configmaps",
            "subresource": "",
            "scope": "namespace",
            "component": "apiserver",
            "code": "504",
        },
    )
    assert count == 1.0
