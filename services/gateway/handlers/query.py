"""What a resource request's query says, as kube validates it: a write's
options (dryRun, fieldValidation, fieldManager) and a read's list options and
rendering; also what a write's body is read as."""

from __future__ import annotations

from aiohttp import web

from services.gateway import negotiation, paths
from services.gateway.catalog import APIResource
from services.gateway.output import OUTPUT
from strata.api import errors, goquote
from strata.api.causes import not_supported, too_long
from strata.proto.registry.v1 import registry_pb2


def into(api: APIResource, info: paths.RequestInfo) -> tuple[str, str]:
    """The apiVersion and kind a write's body is read as (a Scale for scale, a
    TokenRequest for a ServiceAccount's token)."""
    if info.subresource == "scale":
        return "autoscaling/v1", "Scale"
    if info.subresource == "token":
        return "authentication.k8s.io/v1", "TokenRequest"
    return (f"{api.group}/{api.version}" if api.group else api.version), api.kind


def api_version(ref: registry_pb2.ResourceRef) -> str:
    return f"{ref.group}/{ref.version}" if ref.group else ref.version


def decoding(body: negotiation.Body) -> registry_pb2.Decoding:
    return registry_pb2.Decoding(strict_errors=body.strict_errors, converted=body.converted)


def dry_run(values: list[str], options_kind: str) -> bool:
    """Whether the write is a dry run (kube's ValidateDryRun: "All" is the one
    value; anything else is a 422 on the request's options)."""
    if any(v != "All" for v in values):
        cause = not_supported("dryRun", values, ("All",))
        raise errors.invalid(options_kind, "", [cause], "meta.k8s.io")
    return bool(values)


FIELD_VALIDATIONS = ("", "Ignore", "Strict", "Warn")


def field_validation(request: web.Request, options_kind: str) -> str:
    """The write's fieldValidation (kube's ValidateFieldValidation: one of four
    values, "" among them; anything else is a 422 on the request's options)."""
    value = request.query.get("fieldValidation", "")
    if value not in FIELD_VALIDATIONS:
        cause = not_supported("fieldValidation", value, FIELD_VALIDATIONS)
        raise errors.invalid(options_kind, "", [cause], "meta.k8s.io")
    return value


MAX_FIELD_MANAGER = 128


def field_manager(request: web.Request, options_kind: str) -> str:
    """Who a write's fields belong to: fieldManager (at most 128 bytes, as kube
    validates it), else the User-Agent's product name as kube derives it."""
    given = request.query.get("fieldManager", "")
    if len(given.encode()) > MAX_FIELD_MANAGER:
        cause = too_long("fieldManager", MAX_FIELD_MANAGER)
        raise errors.invalid(options_kind, "", [cause], "meta.k8s.io")
    if given:
        return given
    product = request.headers.get("User-Agent", "").split("/")[0]
    return "".join(c for c in product if c.isprintable())[:MAX_FIELD_MANAGER]


def rendering(request: web.Request) -> registry_pb2.Rendering:
    return registry_pb2.Rendering(
        as_table=request[OUTPUT].transform == negotiation.TABLE,
        include_object=request.query.get("includeObject", ""),
    )


_UINT64_MAX = 2**64 - 1


def go_int64(text: str) -> int:
    """text as Go's strconv.ParseInt(text, 10, 64) reads it, else ValueError
    with Go's error: out of range as soon as its leading digits overflow
    (what follows them is not looked at), else invalid syntax for anything
    but an optional sign and ASCII digits."""
    unsigned = text[1:] if text[:1] in ("+", "-") else text
    rest = unsigned.lstrip("0123456789")
    digits = unsigned[: len(unsigned) - len(rest)]
    significant = digits.lstrip("0")
    # Compared by length first: int() refuses more than 4300 digits.
    overflows = len(significant) > 20 or int(significant or 0) > _UINT64_MAX
    if not overflows and (not digits or rest):
        raise ValueError(f"strconv.ParseInt: parsing {goquote.quote(text)}: invalid syntax")
    value = 0 if overflows else int(text)
    if overflows or not -(2**63) <= value < 2**63:
        raise ValueError(f"strconv.ParseInt: parsing {goquote.quote(text)}: value out of range")
    return value


def _int64_parameter(request: web.Request, name: str) -> int:
    """An int64 query parameter (its first value; 0 when absent), or kube's
    400 for one its conversion of the query refuses: Go's error, nothing more."""
    text = request.query.get(name)
    if text is None:
        return 0
    try:
        return go_int64(text)
    except ValueError as e:
        raise errors.bad_request(str(e)) from None


def list_options(request: web.Request) -> registry_pb2.ListOptions:
    """The query's ListOptions, converted as kube converts them (its int64s in
    the order of kube's ListOptions: timeoutSeconds, then limit). A negative
    limit is no limit, as in kube."""
    query = request.query
    timeout_seconds = _int64_parameter(request, "timeoutSeconds")
    limit = _int64_parameter(request, "limit")
    options = registry_pb2.ListOptions(
        label_selector=query.get("labelSelector", ""),
        field_selector=query.get("fieldSelector", ""),
        resource_version=query.get("resourceVersion", ""),
        resource_version_match=query.get("resourceVersionMatch", ""),
        limit=max(limit, 0),
        allow_watch_bookmarks=paths.truthy(query.get("allowWatchBookmarks")),
        send_initial_events=paths.flag(query.get("sendInitialEvents")),
        timeout_seconds=timeout_seconds,
        rendering=rendering(request),
    )
    setattr(options, "continue", query.get("continue", ""))  # a Python keyword
    return options
