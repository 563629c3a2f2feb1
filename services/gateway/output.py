"""Resource responses written as the request negotiated them: YAML instead of
JSON, objects as their PartialObjectMetadata, pretty JSON for ?pretty=true, and
gzip for large bodies when the client takes it (kube compresses from 128 KiB,
at its fastest level).
Handlers write JSON; this middleware turns it into what was asked for, and the
handlers read request[OUTPUT] for what they render themselves (Tables)."""

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
        return orjson.dumps(
            {
                "kind": PARTIAL_LIST,
                "apiVersion": f"meta.k8s.io/{out.version}",
                "metadata": obj.get("metadata", {}),
                "items": [_partial(item, out.version) for item in obj.get("items") or []],
            }
        )
    return orjson.dumps(_partial(obj, out.version))


def partial_event(version: str) -> Callable[[bytes], bytes]:
    """A watch event line with its object as PartialObjectMetadata (an ERROR's
    Status stays what it is), for a client that watches metadata only."""

    def transform(line: bytes) -> bytes:
        event: dict[str, Any] = orjson.loads(line)
        obj = event.get("object") or {}
        if obj.get("kind") != "Status":
            event["object"] = _partial(obj, version)
        return orjson.dumps(event) + b"\n"

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


@web.middleware
async def render_output(request: web.Request, handler: Handler) -> web.StreamResponse:
    info = paths.info_of(request)
    if info is None or not info.resource:  # discovery: JSON as it is
        return await handler(request)
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
    elif paths.truthy(request.query.get("pretty")):
        body = orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2) + b"\n"
    if len(body) >= GZIP_THRESHOLD_BYTES and _takes_gzip(request):
        body = (
            await asyncio.to_thread(_gzip, body) if len(body) > _GZIP_INLINE_BYTES else _gzip(body)
        )
        response.headers["Content-Encoding"] = "gzip"
        response.headers.add("Vary", "Accept-Encoding")
    response.body = body
    return response
