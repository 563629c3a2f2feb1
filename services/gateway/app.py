"""The gateway's aiohttp application: tracing, Status rendering and
authentication (tokens, client certificates) as middlewares, then discovery,
health and resource routes."""

from __future__ import annotations

import platform
from collections.abc import Awaitable, Callable, Mapping

import grpc
import orjson
from aiohttp import web
from grpc_health.v1 import health_pb2_grpc
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from services.gateway import authn, health, negotiation, output, paths, requests, tracing
from services.gateway.catalog import Catalog
from services.gateway.handlers import ResourceHandlers, json_response, status_response
from services.gateway.openapi import OpenAPIv3
from strata import telemetry
from strata.api import errors
from strata.api.errors import StatusError
from strata.registry_client import RegistryClient

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# kube's limit on request bodies.
MAX_BODY_BYTES = 3 * 1024 * 1024
KUBE_VERSION = ("1", "32")
GIT_VERSION = f"v{KUBE_VERSION[0]}.{KUBE_VERSION[1]}.0-strata"

log = telemetry.get_logger("strata.gateway")


def _status(request: web.Request, error: StatusError) -> web.Response:
    return status_response(error, pretty=output.wants_pretty(request))


@web.middleware
async def render_status(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except StatusError as e:
        return _status(request, e)
    except web.HTTPRequestEntityTooLarge:
        return _status(request, errors.too_large("the request body is too large"))
    except web.HTTPNotFound:
        # No route: kube's REST container answers a Status for its own paths
        # (/api..., /version/...), Go's mux plain text for the rest.
        if paths.json_prefixed(request.path, ()):
            return _status(request, errors.path_not_found())
        return output.text_not_found()
    except web.HTTPMethodNotAllowed:
        return _status(request, errors.method_not_allowed())
    except web.HTTPException:
        raise
    except Exception as e:  # a bug here must still answer as the API does
        log.exception("request failed", path=request.path, method=request.method)
        return _status(request, errors.internal(f"{type(e).__name__}: {e}"))


async def nothing(_: web.Request) -> web.Response:
    """kube's OpenAPI v3 handler's 404: no body at all."""
    return web.Response(status=404)


async def self_subject_review(request: web.Request) -> web.Response:
    """POST only: kube's route answers any other method 405."""
    if request.method != "POST":
        raise errors.method_not_allowed()
    return await authn.self_subject_review(request)


def build_app(
    *,
    registry_channel: grpc.aio.Channel,
    admin_token: str,
    server_address: str,
    tokens: Mapping[str, authn.User] | None = None,
    max_requests_in_flight: int = requests.MAX_READ_ONLY_IN_FLIGHT,
    max_mutating_requests_in_flight: int = requests.MAX_MUTATING_IN_FLIGHT,
    request_timeout_seconds: float = requests.REQUEST_TIMEOUT_SECONDS,
) -> web.Application:
    registry = RegistryClient(registry_channel)
    health_stub = health_pb2_grpc.HealthStub(registry_channel)
    catalog = Catalog(registry.stub)
    resources = ResourceHandlers(registry, catalog)
    metrics = requests.RequestMetrics()
    in_flight = requests.InFlight(
        metrics, read_only=max_requests_in_flight, mutating=max_mutating_requests_in_flight
    )
    app = web.Application(
        middlewares=[
            tracing.trace_requests,
            metrics.middleware,
            render_status,
            authn.middleware(authn.authenticator(admin_token, tokens or {})),
            output.render_output,
            in_flight.middleware,
            requests.timeouts(request_timeout_seconds),
        ],
        client_max_size=MAX_BODY_BYTES,
    )
    app.on_response_prepare.append(requests.audit_id)

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
        return web.Response(
            body=output.indented(orjson.dumps(info)), content_type="application/json"
        )

    async def discovery(request: web.Request, legacy: bool) -> web.Response | None:
        """The aggregated document, when the client asks for it first."""
        version = negotiation.aggregated_discovery(request.headers.get("Accept", ""))
        if not version:
            return None
        body = orjson.dumps(await catalog.aggregated(legacy, version))
        response = web.Response(body=body)
        response.headers["Content-Type"] = negotiation.AGGREGATED.format(version)
        return response

    async def api(request: web.Request) -> web.Response:
        aggregated = await discovery(request, legacy=True)
        if aggregated is not None:
            return aggregated
        return json_response(orjson.dumps(await catalog.api_versions(server_address)))

    async def apis(request: web.Request) -> web.Response:
        aggregated = await discovery(request, legacy=False)
        if aggregated is not None:
            return aggregated
        return json_response(orjson.dumps(await catalog.api_group_list()))

    async def close_watches(_: web.Application) -> None:
        await resources.close_watches()

    async def close_pipeline(_: web.Application) -> None:
        await registry.close()

    app.on_shutdown.append(close_watches)
    app.on_cleanup.append(close_pipeline)
    for endpoint in ("healthz", "livez"):
        health.add_routes(app.router, endpoint, [health.NamedCheck("ping", health.ping)])
    health.add_routes(app.router, "readyz", health.readyz_checks(health_stub))

    async def metrics_text(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    app.router.add_get("/metrics", metrics_text)
    # Paths with slashes after them as kube takes them: any number after
    # /version and /api, one after /apis (two is a 404 there).
    app.router.add_get("/version{slashes:/*}", version)
    app.router.add_get("/api{slashes:/*}", api)
    # kube serves /apis and /openapi/v2 whatever the method.
    app.router.add_route("*", "/apis{slash:/?}", apis)
    openapi = OpenAPIv3(catalog, GIT_VERSION)
    app.router.add_route("*", "/openapi/v2", openapi.v2)
    app.router.add_get("/openapi/v3", openapi.index)
    app.router.add_get("/openapi/v3/", nothing)
    app.router.add_get("/openapi/v3/{path:.*/}", nothing)
    app.router.add_get("/openapi/v3/{path:.+}", openapi.group_version)
    app.router.add_route(
        "*", "/apis/authentication.k8s.io/v1/selfsubjectreviews", self_subject_review
    )
    # (A tail of slashes alone is /api's or /apis' own, above.)
    app.router.add_route("*", "/api/{tail:.*[^/].*}", resources.handle)
    app.router.add_route("*", "/apis/{tail:.*[^/].*}", resources.handle)
    return app
