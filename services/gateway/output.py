"""Resource responses written as the request negotiated them: YAML instead of
JSON, objects as their PartialObjectMetadata, pretty JSON for ?pretty=true, and
gzip for large bodies when the client takes it (kube compresses from 128 KiB,
at its fastest level).
Handlers write JSON; this middleware turns it into what was asked for, and the
handlers read request[OUTPUT] for what they render themselves (Tables).
JSON leaves here in kube's bytes: as Go's encoder writes it (HTML-safe escapes,
a newline after a compact body, none after an indented one)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import yaml
from aiohttp import web
from isal import isal_zlib

from services.gateway import negotiation, paths
from services.gateway.negotiation import PARTIAL, PARTIAL_LIST, YAML, Output

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# What a resource request negotiated (the handlers render Tables themselves).
OUTPUT = web.RequestKey("strata.output", Output)
GZIP_THRESHOLD_BYTES = 128 * 1024
# kube gzips at level 1 (kubernetes#112296: least CPU, nearly the same size).
# ISA-L's level 1 takes a sixth of zlib's level 1 time on a list of ConfigMaps
# and comes out smaller.
_GZIP_LEVEL = 1
_GZIP_WBITS = 31  # gzip's header and trailer around the deflate stream
# Bodies this large are compressed off the event loop (ISA-L releases the GIL).
_GZIP_INLINE_BYTES = 1024 * 1024
# Bodies this large are turned into YAML off the event loop.
_YAML_INLINE_BYTES = 64 * 1024
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# What Go's encoding/json (kube's encoder) escapes in strings that orjson
# writes as they are: <, > and & (its HTML-safe default) and the line and
# paragraph separators. Outside strings JSON has none of these bytes, so a
# replacement of the bytes is exact.
_GO_ESCAPES = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)
# strconv.ParseBool's true spellings (kube reads ?pretty= with it; anything
# else, its error included, is false).
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
# User agents kube pretty-prints for unasked (browsers and command-line fetchers).
_PRETTY_AGENTS = ("curl", "Wget", "Mozilla/5.0")


def go_escaped(body: bytes) -> bytes:
    """orjson's JSON as Go's encoder writes the same value."""
    for raw, escaped in _GO_ESCAPES:
        if raw in body:
            body = body.replace(raw, escaped)
    return body


def wants_pretty(request: web.Request) -> bool:
    """kube's isPrettyPrint: a non-empty ?pretty= decides (as ParseBool reads
    it); without one, curl, Wget and browsers get indented JSON."""
    if "pretty" in request.query_string:
        value = request.query.get("pretty", "")
        if value:
            return value in _TRUE
    return request.headers.get("User-Agent", "").startswith(_PRETTY_AGENTS)


def indented(body: bytes) -> bytes:
    """JSON indented as Go's json.MarshalIndent(v, "", "  ") writes it (no newline after)."""
    return go_escaped(orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2))


def text_not_found() -> web.Response:
    """Go's http.NotFound, kube's answer for a path none of its handlers serve."""
    response = web.Response(status=404, text="404 page not found\n")
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def _partial(obj: dict[str, Any], version: str) -> dict[str, Any]:
    return {
        "kind": PARTIAL,
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": obj.get("metadata", {}),
    }


def partial_metadata(body: bytes, out: Output) -> bytes:
    """An object's JSON as its PartialObjectMetadata, a list's as a
    PartialObjectMetadataList (a Status stays what it is)."""
    obj: dict[str, Any] = orjson.loads(body)
    if obj.get("kind") == "Status":
        return body
    if out.transform == PARTIAL_LIST:
        partial = {
            "kind": PARTIAL_LIST,
            "apiVersion": f"meta.k8s.io/{out.version}",
            "metadata": obj.get("metadata", {}),
            "items": [_partial(item, out.version) for item in obj.get("items") or []],
        }
    else:
        partial = _partial(obj, out.version)
    return go_escaped(orjson.dumps(partial)) + b"\n"


def partial_event(version: str) -> Callable[[bytes], bytes]:
    """A watch event line with its object as PartialObjectMetadata (an ERROR's
    Status stays what it is), for a client that watches metadata only."""

    def transform(line: bytes) -> bytes:
        event: dict[str, Any] = orjson.loads(line)
        obj = event.get("object") or {}
        if obj.get("kind") != "Status":
            event["object"] = _partial(obj, version)
        return go_escaped(orjson.dumps(event)) + b"\n"

    return transform


def _yaml(body: bytes) -> bytes:
    text: str = yaml.dump(
        orjson.loads(body), Dumper=_Dumper, default_flow_style=False, allow_unicode=True
    )
    return text.encode()


def _gzip(body: bytes) -> bytes:
    return isal_zlib.compress(body, _GZIP_LEVEL, _GZIP_WBITS)


def _takes_gzip(request: web.Request) -> bool:
    """Whether Accept-Encoding names gzip (kube looks for the bare token, no q-value)."""
    accepted = request.headers.get("Accept-Encoding", "")
    return any(token.strip() == "gzip" for token in accepted.split(","))


def _negotiated(request: web.Request, info: paths.RequestInfo) -> tuple[Output, bool]:
    """The request's output, and whether it is a watch (whose stream stays JSON)."""
    watching = paths.watching(request, info)
    listing = request.method == "GET" and not info.name and not watching
    return negotiation.output(request.headers.get("Accept", ""), listing=listing), watching


def _json_body(response: web.StreamResponse) -> bytes | None:
    if not isinstance(response, web.Response) or response.content_type != "application/json":
        return None
    return response.body if isinstance(response.body, bytes) else None


@web.middleware
async def render_output(request: web.Request, handler: Handler) -> web.StreamResponse:
    info = paths.info_of(request)
    if info is None or not info.resource:  # discovery: JSON, indented when asked for
        response = await handler(request)
        document = _json_body(response)
        if document is not None and request.path.startswith("/api") and wants_pretty(request):
            assert isinstance(response, web.Response)
            response.body = indented(document)
        return response
    out, watching = _negotiated(request, info)  # 406 when nothing asked for is written
    request[OUTPUT] = out
    response = await handler(request)
    if (
        watching
        or not isinstance(response, web.Response)
        or response.content_type != "application/json"
    ):
        return response
    body = response.body
    if not isinstance(body, bytes):
        return response
    if out.transform in (PARTIAL, PARTIAL_LIST) and response.status < 300:
        body = partial_metadata(body, out)
    if out.media == YAML:
        body = (
            await asyncio.to_thread(_yaml, body) if len(body) > _YAML_INLINE_BYTES else _yaml(body)
        )
        response.content_type = YAML
    elif wants_pretty(request):
        body = indented(body)
    if len(body) >= GZIP_THRESHOLD_BYTES and _takes_gzip(request):
        body = (
            await asyncio.to_thread(_gzip, body) if len(body) > _GZIP_INLINE_BYTES else _gzip(body)
        )
        response.headers["Content-Encoding"] = "gzip"
        response.headers.add("Vary", "Accept-Encoding")
    response.body = body
    return response
