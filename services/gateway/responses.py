"""How the gateway writes an answer of its own: compact JSON as kube's encoder
writes it, an object with the warnings its request earned, and a Status.
Shared by the handlers and by the chain's Status rendering."""

from __future__ import annotations

from aiohttp import web

from services.gateway.output import go_escaped, indented
from strata.api import goquote
from strata.api.errors import StatusError
from strata.proto.registry.v1 import registry_pb2

JSON = "application/json"


def json_response(body: bytes, status: int = 200) -> web.Response:
    """body, compact JSON, as kube's encoder writes it (Go's escapes, a newline after)."""
    return web.Response(body=go_escaped(body) + b"\n", status=status, content_type=JSON)


def warning_header(text: str) -> str:
    """A Warning header value as kube-apiserver writes one (code 299, no agent,
    the text quoted as Go quotes it)."""
    return f"299 - {goquote.quote(text)}"


def object_response(answer: registry_pb2.ObjectResponse, status: int = 200) -> web.Response:
    """The registry's object, with the warnings the request earned."""
    response = json_response(answer.object, status)
    for text in answer.warnings:
        response.headers.add("Warning", warning_header(text))
    return response


def status_response(error: StatusError, pretty: bool = False) -> web.Response:
    if pretty:
        response = web.Response(
            body=indented(error.to_json()), status=error.code, content_type=JSON
        )
    else:
        response = json_response(error.to_json(), error.code)
    if error.retry_after_seconds is not None:
        response.headers["Retry-After"] = str(error.retry_after_seconds)
    return response
