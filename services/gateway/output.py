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
import functools
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import yaml
from aiohttp import web
from isal import isal_zlib

from services.gateway import negotiation, patches, paths
from services.gateway.negotiation import PARTIAL, PARTIAL_LIST, YAML, Output
from strata.api import gomarshal, patch_types
from strata.api.errors import StatusError

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
# strconv.ParseBool's true spellings (kube reads ?pretty= with it; anything
# else, its error included, is false).
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
# User agents kube pretty-prints for unasked (browsers and command-line fetchers).
_PRETTY_AGENTS = ("curl", "Wget", "Mozilla/5.0")


def go_escaped(body: bytes) -> bytes:
    """orjson's JSON as Go's encoder writes the same value."""
    return gomarshal.escaped(body)


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


# Groups kube serves through go-restful, its router: the legacy groups and those
# under k8s.io (a CRD may take such a group only with kube's api-approved
# annotation). Custom resources have a handler of their own, without the
# router's 406 and 415.
_ROUTED_GROUPS = frozenset({"", "apps", "batch", "autoscaling", "policy"})


def _routed(group: str) -> bool:
    return group in _ROUTED_GROUPS or group.endswith(".k8s.io")


def _patch_refusal(request: web.Request, info: paths.RequestInfo) -> StatusError | None:
    """kube's 415 for a patch type no PATCH takes: go-restful's for its routes,
    the custom resource handler's own (naming the types it takes) for the rest.
    (Which types one resource takes, the handler decides.)"""
    media = patches.patch_media(request.headers.get("Content-Type", ""))
    if _routed(info.group):
        return None if media in patches.CONSUMED else patches.unsupported_media_type()
    custom = (*patch_types.FOR_CUSTOM, patch_types.APPLY_PATCH)
    return None if media in custom else negotiation.unsupported_body(custom)


@functools.lru_cache(maxsize=256)
def _output(accept: str, listing: bool, streams: bool, routed: bool) -> Output:
    """negotiation.output, remembered: a pure function of an Accept header,
    which a client sends the same on every request, and three flags (parsing it
    again took about a quarter of render_output's own time). A 406 is not
    remembered (lru_cache keeps no exceptions)."""
    return negotiation.output(accept, listing=listing, streams=streams, routed=routed)


def _negotiated(request: web.Request, info: paths.RequestInfo) -> tuple[Output, bool]:
    """The request's output, and whether it is a watch (whose stream stays JSON)."""
    watching = paths.watching(request, info)
    listing = request.method == "GET" and not info.name and not watching
    # kube's collection GET and its /watch/ paths produce the watch streams too.
    streams = request.method == "GET" and (not info.name or info.watch_path)
    accept = request.headers.get("Accept", "")
    routed = _routed(info.group)
    return _output(accept, listing, streams, routed), watching


def not_acceptable(request: web.Request, error: StatusError) -> web.Response:
    """A 406 as kube writes it: its Status negotiated for the same Accept, which
    allows none almost always, and then kube writes indented JSON."""
    body = error.to_json()
    if negotiation.status_writable(request.headers.get("Accept", "")):
        body = indented(body) if wants_pretty(request) else go_escaped(body) + b"\n"
    else:
        body = indented(body)
    return web.Response(body=body, status=error.code, content_type="application/json")


def _discovery_refusal(request: web.Request) -> StatusError | None:
    """kube's 406 for a discovery document when Accept names nothing it writes:
    go-restful's for /version, /api, /api/<v> and /apis/<g>/<v>, kube's own for
    /apis and /apis/<g> (plain handlers)."""
    accept = request.headers.get("Accept", "")
    if not accept.strip():
        return None
    parts = [part for part in request.path.split("/") if part]
    if parts == ["version"]:
        produces: tuple[str, ...] = ("application/json",)
    elif parts[:1] == ["api"] or (parts[:1] == ["apis"] and len(parts) == 3):
        produces = negotiation.REPRESENTATIONS
    elif parts[:1] == ["apis"]:
        return None if negotiation.handler_accepts(accept) else negotiation.not_acceptable()
    else:
        return None
    if negotiation.route_accepts(accept, produces):
        return None
    return negotiation.route_not_acceptable(produces)


def _json_body(response: web.StreamResponse) -> bytes | None:
    if not isinstance(response, web.Response) or response.content_type != "application/json":
        return None
    return response.body if isinstance(response.body, bytes) else None


@web.middleware
async def render_output(request: web.Request, handler: Handler) -> web.StreamResponse:
    info = paths.info_of(request)
    if info is None or not info.resource:  # discovery: JSON, indented when asked for
        response = await handler(request)
        if response.status == 200 and (refusal := _discovery_refusal(request)) is not None:
            return not_acceptable(request, refusal)
        document = _json_body(response)
        if document is not None and request.path.startswith("/api") and wants_pretty(request):
            assert isinstance(response, web.Response)
            response.body = indented(document)
        return response
    # A patch's type counts before Accept does.
    if request.method == "PATCH" and info.name and (refusal := _patch_refusal(request, info)):
        raise refusal
    try:
        out, watching = _negotiated(request, info)
    except StatusError as e:  # nothing asked for is written: 406
        return not_acceptable(request, e)
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
    accepted = request.headers.get("Accept-Encoding", "")
    if len(body) >= GZIP_THRESHOLD_BYTES and negotiation.takes_gzip(accepted):
        body = (
            await asyncio.to_thread(_gzip, body) if len(body) > _GZIP_INLINE_BYTES else _gzip(body)
        )
        response.headers["Content-Encoding"] = "gzip"
        response.headers.add("Vary", "Accept-Encoding")
    response.body = body
    return response
