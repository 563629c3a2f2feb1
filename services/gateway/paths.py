"""RequestInfo: what a REST path asks for (kube's RequestInfoFactory), parsed
without knowing which resources exist; the handler checks that afterwards.
Also how a request's boolean query parameters read, whether it is a watch, and
its verb: every filter and handler asks the same questions of a request."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aiohttp import web


@dataclass(frozen=True, kw_only=True)
class RequestInfo:
    group: str
    version: str
    # "" for the group-version itself (discovery).
    resource: str = ""
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    # The legacy /watch/ path prefix.
    watch_path: bool = False


def parse(path: str) -> RequestInfo | None:
    """None when path is not under /api or /apis, or is not a resource path.
    /apis/<group> is the group's discovery (version ""). As kube's
    RequestInfoFactory splits a path: slashes at either end do not count (so
    /api/v1/namespaces/ is /api/v1/namespaces), an empty part between two
    slashes does, and matches nothing."""
    parts = path.strip("/").split("/")
    if "" in parts:
        return None
    if parts[0] == "api":
        if len(parts) < 2:
            return None
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis":
        if len(parts) < 2:
            return None
        if len(parts) == 2:
            return RequestInfo(group=parts[1], version="")
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch_path = bool(rest) and rest[0] == "watch"
    if watch_path:
        rest = rest[1:]
    if not rest:
        return None if watch_path else RequestInfo(group=group, version=version)
    namespace = ""
    # /namespaces/<ns>/<resource>... is a namespaced path; /namespaces and
    # /namespaces/<name>[/<subresource>] are the namespaces resource itself.
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 3:
        return None
    return RequestInfo(
        group=group,
        version=version,
        resource=rest[0],
        namespace=namespace,
        name=rest[1] if len(rest) > 1 else "",
        subresource=rest[2] if len(rest) > 2 else "",
        watch_path=watch_path,
    )


def json_prefixed(path: str, groups: Iterable[str]) -> bool:
    """Whether kube answers a path it has nothing at with a JSON Status (what
    its REST container serves: /api..., /apis/<served group>..., /version/...)
    rather than Go's plain-text "404 page not found"."""
    parts = path.split("/")[1:]  # "//version" is not /version's: its first part is ""
    if parts[0] in ("api", "version"):
        return True
    return parts[0] == "apis" and len(parts) > 1 and parts[1] in groups


def flag(value: str | None) -> bool | None:
    """A boolean query parameter as kube converts it: absent is None; "0" and
    "false" (any case) are false; anything else, "" included, is true."""
    if value is None:
        return None
    return value != "0" and value.lower() != "false"


def truthy(value: str | None) -> bool:
    return bool(flag(value))


_INFO = web.RequestKey("strata.request_info", object)


def info_of(request: web.Request) -> RequestInfo | None:
    """request's path parsed, once per request whoever asks."""
    if _INFO not in request:
        request[_INFO] = parse(request.path)
    found = request[_INFO]
    return found if isinstance(found, RequestInfo) else None


def watching(request: web.Request, info: RequestInfo) -> bool:
    """A GET that watches: the legacy /watch/ path or ?watch=."""
    return request.method == "GET" and (info.watch_path or truthy(request.query.get("watch")))


# The verbs of the methods on a named object, on a collection and on a
# subresource (a GET, which may be a watch, is decided apart).
_NAMED_VERBS = {"PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_COLLECTION_VERBS = {"POST": "create", "DELETE": "deletecollection"}
_SUBRESOURCE_VERBS = {"PUT": "update", "PATCH": "patch"}


def verb(request: web.Request, info: RequestInfo) -> str:
    """kube's verb of a resource request as strata serves it: get, list, watch,
    create, update, patch, delete or deletecollection; "" for a method the path
    has no route for (405). A namespace's finalize is only ever PUT, a
    ServiceAccount's token only ever POSTed (a create)."""
    method = request.method
    if info.subresource:
        if info.subresource == "finalize" and method != "PUT":
            return ""
        if info.subresource == "token":
            return "create" if method == "POST" else ""
        if method == "GET":
            return "" if watching(request, info) else "get"
        return _SUBRESOURCE_VERBS.get(method, "")
    if watching(request, info):
        return "watch"
    if method == "GET":
        return "get" if info.name else "list"
    if info.watch_path:
        return ""
    return (_NAMED_VERBS if info.name else _COLLECTION_VERBS).get(method, "")
