"""A SERVER span per request, continuing the caller's W3C traceparent.

opentelemetry-instrumentation-aiohttp-server did this before; it collected its
request attributes and looked up its URL exclusions for every request, sampled
or not, which was a sixth of the gateway's CPU on a get. Here an unsampled
request costs one non-recording span, and attributes are gathered only for the
spans that are exported.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_tracer = trace.get_tracer("strata.gateway.http")


def _route(request: web.Request) -> str:
    """The route's pattern (never a path: names and namespaces would make every
    span name different)."""
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else ""


@web.middleware
async def trace_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    headers = request.headers
    context = propagate.extract(headers) if "traceparent" in headers else None
    name = f"{request.method} {_route(request)}".rstrip()
    with _tracer.start_as_current_span(name, context=context, kind=SpanKind.SERVER) as span:
        if span.is_recording():
            span.set_attributes(
                {
                    "http.request.method": request.method,
                    "url.path": request.path,
                    "url.scheme": request.scheme,
                    "server.address": request.host,
                    "user_agent.original": headers.get("User-Agent", ""),
                }
            )
        response = await handler(request)
        if span.is_recording():
            span.set_attribute("http.response.status_code", response.status)
            if response.status >= 500:
                span.set_status(Status(StatusCode.ERROR))
        return response
