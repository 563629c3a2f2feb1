"""The gateway's seams on a real aiohttp server: the request chain puts every
request to its authorizer (kube's attributes, kube's 403), the handlers route
by verb, and every write goes through the admission plugins it is given."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from services.gateway import chain, output
from services.gateway.admission import Admission, Attributes, Operation
from services.gateway.authorizers import Attributes as AuthorizerAttributes
from services.gateway.authorizers import Decision
from services.gateway.authorizers.always_allow import AlwaysAllow
from services.gateway.authorizers.questions import Questions
from services.gateway.catalog import APIResource, Catalog
from services.gateway.chain import authentication
from services.gateway.chain.metrics import RequestMetrics
from services.gateway.chain.status import render_status
from services.gateway.handlers import ResourceHandlers
from services.gateway.handlers.discovery import Discovery
from services.gateway.user import ANONYMOUS, USER, User
from strata.api import errors
from strata.proto.registry.v1 import registry_pb2
from strata.registry_client import RegistryClient

TOKEN = "t0ken"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}


class Refusing:
    """An authorizer that has no opinion on anything, and remembers what it was asked."""

    def __init__(self, reason: str = "") -> None:
        self.reason = reason
        self.asked: list[AuthorizerAttributes] = []

    async def authorize(self, attributes: AuthorizerAttributes) -> tuple[Decision, str]:
        self.asked.append(attributes)
        return Decision.NO_OPINION, self.reason


async def _ok(_: web.Request) -> web.Response:
    return web.json_response({})


@pytest.fixture
async def refused() -> AsyncIterator[tuple[aiohttp.ClientSession, Refusing]]:
    authorizer = Refusing()
    app = web.Application(
        middlewares=chain.middlewares(
            metrics=RequestMetrics(),
            authenticate=authentication.authenticator(TOKEN, {}),
            authorizer=authorizer,
            bounds=chain.Limits(),
        )
    )
    chain.install_hooks(app)
    app.router.add_get("/healthz", _ok)
    app.router.add_route("*", "/api/{tail:.+}", _ok)
    app.router.add_route("*", "/apis/{tail:.+}", _ok)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    async with aiohttp.ClientSession(base_url=str(server.make_url(""))) as session:
        yield session, authorizer
    await server.close()


# kube-apiserver's 403s for these requests, as its authorization filter writes them.
@pytest.mark.parametrize(
    ("method", "path", "message", "details"),
    [
        (
            "GET",
            "/api/v1/namespaces/a/configmaps/x",
            'configmaps "x" is forbidden: User "strata-admin" cannot get resource '
            '"configmaps" in API group "" in the namespace "a"',
            {"name": "x", "kind": "configmaps"},
        ),
        (
            "GET",
            "/apis/apps/v1/deployments?watch=1",
            'deployments.apps is forbidden: User "strata-admin" cannot watch resource '
            '"deployments" in API group "apps" at the cluster scope',
            {"group": "apps", "kind": "deployments"},
        ),
        (
            "PUT",
            "/apis/apps/v1/namespaces/a/deployments/d/scale",
            'deployments.apps "d" is forbidden: User "strata-admin" cannot update resource '
            '"deployments/scale" in API group "apps" in the namespace "a"',
            {"name": "d", "group": "apps", "kind": "deployments"},
        ),
        (
            "DELETE",
            "/api/v1/namespaces/a/configmaps",
            'configmaps is forbidden: User "strata-admin" cannot deletecollection resource '
            '"configmaps" in API group "" in the namespace "a"',
            {"kind": "configmaps"},
        ),
        (
            "GET",
            "/apis/apps/v1",
            'forbidden: User "strata-admin" cannot get path "/apis/apps/v1"',
            {},
        ),
    ],
)
async def test_a_request_the_authorizer_does_not_allow_is_kubes_403(
    refused: tuple[aiohttp.ClientSession, Refusing],
    method: str,
    path: str,
    message: str,
    details: dict[str, str],
) -> None:
    session, _ = refused
    async with session.request(method, path, headers=ADMIN) as response:
        assert response.status == 403
        assert len(response.headers["Audit-ID"]) == 36
        status = await response.json()
    assert (status["reason"], status["message"], status["details"]) == (
        "Forbidden",
        message,
        details,
    )


async def test_the_authorizer_sees_kubes_attributes(
    refused: tuple[aiohttp.ClientSession, Refusing],
) -> None:
    session, authorizer = refused
    authorizer.reason = "no RBAC policy matched"
    async with session.post("/api/v1/namespaces/a/configmaps", headers=ADMIN) as response:
        status = await response.json()
    assert status["message"].endswith('in the namespace "a": no RBAC policy matched')
    async with session.get("/healthz") as response:
        assert response.status == 403
    admin = User("strata-admin", "", ("system:masters", "system:authenticated"))
    assert authorizer.asked == [
        AuthorizerAttributes(
            user=admin,
            verb="create",
            path="/api/v1/namespaces/a/configmaps",
            resource_request=True,
            api_group="",
            api_version="v1",
            resource="configmaps",
            namespace="a",
        ),
        AuthorizerAttributes(user=ANONYMOUS, verb="get", path="/healthz", resource_request=False),
    ]


async def test_an_unauthenticated_request_is_401_before_it_is_authorized(
    refused: tuple[aiohttp.ClientSession, Refusing],
) -> None:
    session, authorizer = refused
    async with session.get("/api/v1/namespaces") as response:
        assert response.status == 401
    assert authorizer.asked == []


CONFIGMAPS = APIResource(
    name="configmaps",
    namespaced=True,
    kind="ConfigMap",
    version="v1",
    list_kind="ConfigMapList",
    verbs=["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
)


class FakeRegistry:
    """The Registry calls the write handlers make, answered with the body written."""

    stub: Any = None

    def __init__(self) -> None:
        self.written: list[tuple[str, bytes]] = []
        # Patches, which the registry applies inside its conflict loop.
        self.patched: list[registry_pb2.Patch] = []
        self.reads = 0

    async def Create(self, request: registry_pb2.CreateRequest) -> registry_pb2.ObjectResponse:
        self.written.append(("create", request.body))
        return registry_pb2.ObjectResponse(object=request.body)

    async def Update(self, request: registry_pb2.UpdateRequest) -> registry_pb2.ObjectResponse:
        if request.HasField("patch"):
            self.patched.append(request.patch)
            return registry_pb2.ObjectResponse(object=b"{}")
        self.written.append(("update", request.body))
        return registry_pb2.ObjectResponse(object=request.body)

    async def Get(self, request: registry_pb2.GetRequest) -> registry_pb2.ObjectResponse:
        self.reads += 1
        return registry_pb2.ObjectResponse(object=b'{"metadata":{"name":"x"}}')

    async def Delete(self, request: registry_pb2.DeleteRequest) -> registry_pb2.ObjectResponse:
        self.written.append(("delete", b""))
        return registry_pb2.ObjectResponse(object=b"{}")


class FakeCatalog:
    async def lookup(self, group: str, version: str, resource: str) -> APIResource | None:
        return CONFIGMAPS if (group, version, resource) == ("", "v1", "configmaps") else None


class Labelling:
    """A mutating plugin: a label on every object written."""

    def __init__(self) -> None:
        self.seen: list[Attributes] = []

    async def admit(self, attributes: Attributes, obj: bytes) -> bytes:
        self.seen.append(attributes)
        if not obj:
            return obj
        parsed = orjson.loads(obj)
        parsed["metadata"].setdefault("labels", {})["admitted"] = "yes"
        return orjson.dumps(parsed)


class Refusal:
    """A validating plugin that refuses an object named "no" and any delete."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []

    async def validate(self, attributes: Attributes, obj: bytes) -> None:
        self.seen.append(obj)
        if attributes.operation is Operation.DELETE or attributes.name == "no":
            raise errors.forbidden(attributes.resource, attributes.name, "admission says no")


@web.middleware
async def _as_admin(request: web.Request, handler: Any) -> web.StreamResponse:
    request[USER] = User("admin")
    return cast(web.StreamResponse, await handler(request))


@pytest.fixture
async def admitted() -> AsyncIterator[
    tuple[aiohttp.ClientSession, FakeRegistry, Labelling, Refusal]
]:
    registry, mutating, validating = FakeRegistry(), Labelling(), Refusal()
    catalog = cast(Catalog, FakeCatalog())
    handlers = ResourceHandlers(
        cast(RegistryClient, registry),
        catalog,
        Discovery(catalog, ""),
        Admission([mutating], [validating]),
        Questions(AlwaysAllow()),
    )
    app = web.Application(middlewares=[render_status, _as_admin, output.render_output])
    app.router.add_route("*", "/api/{tail:.+}", handlers.handle)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    async with aiohttp.ClientSession(base_url=str(server.make_url(""))) as session:
        yield session, registry, mutating, validating
    await server.close()


async def test_writes_go_through_admission(
    admitted: tuple[aiohttp.ClientSession, FakeRegistry, Labelling, Refusal],
) -> None:
    session, registry, mutating, validating = admitted
    path = "/api/v1/namespaces/a/configmaps"
    created = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    async with session.post(path, json=created) as response:
        assert response.status == 201
    async with session.put(f"{path}/x?dryRun=All", json=created) as response:
        assert response.status == 200
    headers = {"Content-Type": "application/merge-patch+json"}
    async with session.patch(f"{path}/x", data=b'{"data":{"k":"v"}}', headers=headers) as response:
        assert response.status == 200
    labelled = {"name": "x", "labels": {"admitted": "yes"}}
    assert [(verb, orjson.loads(body)["metadata"]) for verb, body in registry.written] == [
        ("create", labelled),
        ("update", labelled),
    ]
    # The validating plugins see the object as the mutating ones left it.
    assert validating.seen == [body for _, body in registry.written]
    assert [(a.operation, a.name, a.dry_run, a.user.name) for a in mutating.seen] == [
        (Operation.CREATE, "", False, "admin"),
        (Operation.UPDATE, "x", True, "admin"),
    ]
    # A patch is the registry's to apply, as sent: no plugin sees it here, and
    # the gateway reads nothing for it (the registry's loop reads the object).
    assert [(p.type, p.body) for p in registry.patched] == [
        ("application/merge-patch+json", b'{"data":{"k":"v"}}')
    ]
    assert registry.reads == 0


async def test_a_write_admission_refuses_reaches_no_registry(
    admitted: tuple[aiohttp.ClientSession, FakeRegistry, Labelling, Refusal],
) -> None:
    session, registry, _, _ = admitted
    path = "/api/v1/namespaces/a/configmaps"
    async with session.put(f"{path}/no", json={"metadata": {"name": "no"}}) as response:
        assert response.status == 403
        status = await response.json()
    assert status["message"] == 'configmaps "no" is forbidden: admission says no'
    async with session.delete(f"{path}/x") as response:
        assert response.status == 403
    assert registry.written == []


async def test_the_router_refuses_a_verb_the_resource_does_not_serve(
    admitted: tuple[aiohttp.ClientSession, FakeRegistry, Labelling, Refusal],
) -> None:
    session, registry, mutating, _ = admitted
    for method, path in (
        ("POST", "/api/v1/namespaces/a/configmaps/x"),
        ("PUT", "/api/v1/namespaces/a/configmaps"),
        ("POST", "/api/v1/watch/namespaces/a/configmaps"),
    ):
        async with session.request(method, path, data=b"{}") as response:
            assert response.status == 405, (method, path)
    assert registry.written == [] and mutating.seen == []
