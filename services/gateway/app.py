"""The gateway's aiohttp application: the request chain
(services/gateway/chain/) in front of health, version, metrics, OpenAPI,
discovery and the resource handlers (services/gateway/handlers/), with the
authorizer and admission plugins the handlers are not to know."""

from __future__ import annotations

import platform
from collections.abc import Mapping

import grpc
import orjson
from aiohttp import web
from grpc_health.v1 import health_pb2_grpc

from services.gateway import chain, health, output
from services.gateway.admission import Admission, plugins
from services.gateway.audit import AuditConfig, Auditor
from services.gateway.authenticators.flags import Authentication
from services.gateway.authorizers import Mode
from services.gateway.authorizers.always_allow import AlwaysAllow
from services.gateway.authorizers.questions import Questions
from services.gateway.authorizers.reviews import Reviewer
from services.gateway.catalog import Catalog
from services.gateway.chain import authentication, bodies, limits, timeouts
from services.gateway.chain.metrics import RequestMetrics
from services.gateway.handlers import ResourceHandlers
from services.gateway.handlers.discovery import Discovery
from services.gateway.handlers.reviews import RESOURCES as REVIEWS
from services.gateway.handlers.reviews import Reviews
from services.gateway.handlers.tokens import RESOURCES as TOKEN_REVIEWS
from services.gateway.handlers.tokens import TokenReviews
from services.gateway.handlers.whoami import self_subject_review
from services.gateway.openapi import OpenAPIv3
from services.gateway.user import User
from strata.registry_client import RegistryClient

KUBE_VERSION = ("1", "32")
GIT_VERSION = f"v{KUBE_VERSION[0]}.{KUBE_VERSION[1]}.0-strata"


async def nothing(_: web.Request) -> web.Response:
    """kube's OpenAPI v3 handler's 404: no body at all."""
    return web.Response(status=404)


async def version(_: web.Request) -> web.Response:
    major, minor = KUBE_VERSION
    info = {
        "major": major,
        "minor": minor,
        "gitVersion": GIT_VERSION,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": platform.python_implementation().lower(),
        "platform": f"{platform.system().lower()}/{platform.machine()}",
    }
    # kube writes /version indented whoever asks, with no newline after.
    return web.Response(body=output.indented(orjson.dumps(info)), content_type="application/json")


def build_app(
    *,
    registry_channel: grpc.aio.Channel,
    admin_token: str,
    server_address: str,
    tokens: Mapping[str, User] | None = None,
    max_requests_in_flight: int = limits.MAX_READ_ONLY_IN_FLIGHT,
    max_mutating_requests_in_flight: int = limits.MAX_MUTATING_IN_FLIGHT,
    request_timeout_seconds: float = timeouts.REQUEST_TIMEOUT_SECONDS,
    authorizer: Mode | None = None,
    admission: Admission | None = None,
    audit: AuditConfig | None = None,
    authn: Authentication | None = None,
) -> web.Application:
    """The application; authorizer defaults to AlwaysAllow, admission to the
    plugins strata enables (services/gateway/admission/plugins/), authn (what
    the authentication flags built) to the admin token and tokens alone."""
    registry = RegistryClient(registry_channel)
    catalog = Catalog(registry.stub, served_here=(*REVIEWS, *TOKEN_REVIEWS))
    request_authenticator = (
        authn.request if authn else authentication.authenticator(admin_token, tokens or {})
    )
    authorizer = authorizer or AlwaysAllow()
    discovery = Discovery(catalog, server_address)
    if admission is None:
        admission = Admission(plugins.MUTATING, plugins.VALIDATING)
    resources = ResourceHandlers(registry, catalog, discovery, admission, Questions(authorizer))
    metrics = RequestMetrics()
    # kube's audit metrics are served beside its request metrics.
    auditor = Auditor(audit, metrics.registry) if audit is not None else None
    app = web.Application(
        middlewares=chain.middlewares(
            metrics=metrics,
            authenticate=request_authenticator,
            authorizer=authorizer,
            bounds=chain.Limits(
                read_only=max_requests_in_flight,
                mutating=max_mutating_requests_in_flight,
                timeout_seconds=request_timeout_seconds,
            ),
            auditor=auditor,
        ),
        client_max_size=bodies.MAX_BODY_BYTES,
    )
    chain.install_hooks(app, auditor)
    if authn is not None:
        app.on_startup.append(authn.start)
        app.on_cleanup.append(authn.stop)
        if authn.discovery is not None:
            authn.discovery.add_routes(app.router)
    reviews = TokenReviews(request_authenticator.tokens)
    app.router.add_route("*", "/apis/authentication.k8s.io/v1/tokenreviews", reviews.create)

    async def close_watches(_: web.Application) -> None:
        await resources.close_watches()

    async def close_pipeline(_: web.Application) -> None:
        await registry.close()

    app.on_shutdown.append(close_watches)
    app.on_cleanup.append(close_pipeline)
    for endpoint in ("healthz", "livez"):
        health.add_routes(app.router, endpoint, [health.NamedCheck("ping", health.ping)])
    health.add_routes(
        app.router, "readyz", health.readyz_checks(health_pb2_grpc.HealthStub(registry_channel))
    )
    app.router.add_get("/metrics", metrics.serve)
    Reviews(Reviewer(authorizer)).add_routes(app.router)
    _add_api_routes(app.router, catalog, discovery, resources)
    return app


def _add_api_routes(
    router: web.UrlDispatcher, catalog: Catalog, discovery: Discovery, resources: ResourceHandlers
) -> None:
    """/version, discovery, OpenAPI and the resources, in the order they match."""
    # Paths with slashes after them as kube takes them: any number after
    # /version and /api, one after /apis (two is a 404 there).
    router.add_get("/version{slashes:/*}", version)
    router.add_get("/api{slashes:/*}", discovery.api)
    # kube serves /apis and /openapi/v2 whatever the method.
    router.add_route("*", "/apis{slash:/?}", discovery.apis)
    openapi = OpenAPIv3(catalog, GIT_VERSION)
    router.add_route("*", "/openapi/v2", openapi.v2)
    router.add_get("/openapi/v3", openapi.index)
    router.add_get("/openapi/v3/", nothing)
    router.add_get("/openapi/v3/{path:.*/}", nothing)
    router.add_get("/openapi/v3/{path:.+}", openapi.group_version)
    router.add_route("*", "/apis/authentication.k8s.io/v1/selfsubjectreviews", self_subject_review)
    # (A tail of slashes alone is /api's or /apis' own, above.)
    router.add_route("*", "/api/{tail:.*[^/].*}", resources.handle)
    router.add_route("*", "/apis/{tail:.*[^/].*}", resources.handle)
