"""kube's audit Event (`audit.k8s.io/v1`) as its log backend writes it: one
JSON line an event, the fields in the Go struct's order, empty ones left out,
Go's escapes, timestamps in microseconds. The parts that describe a request
(user, source IPs, object reference, response status) are made here from what
the gateway knows; encode turns a finished event into its line, off the event
loop, in the log's writer thread."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson
from aiohttp import web

from services.gateway.authorizers import Attributes
from services.gateway.user import User
from strata.api import gomarshal

Obj = dict[str, Any]

HEAD = {"kind": "Event", "apiVersion": "audit.k8s.io/v1"}
# kube's ObjectReference, in the struct's order.
REF_KEYS = (
    "resource",
    "namespace",
    "name",
    "uid",
    "apiGroup",
    "apiVersion",
    "resourceVersion",
    "subresource",
)
# What kube records when a request ends with nothing written (its client left).
CLOSED_EARLY: Obj = {
    "metadata": {},
    "status": "Success",
    "message": "Connection closed early",
    "code": 200,
}
# kube's log for a request object and a response object.
REQUEST_OBJECT, RESPONSE_OBJECT = "requestObject", "responseObject"
_TIMESTAMPS = ("requestReceivedTimestamp", "stageTimestamp")


def user_info(user: User | None) -> Obj:
    """kube's UserInfo: username, uid, groups, extra, each left out when empty
    (all of them for a request that failed authentication)."""
    if user is None:
        return {}
    info: Obj = {"username": user.name}
    if user.uid:
        info["uid"] = user.uid
    if user.groups:
        info["groups"] = list(user.groups)
    if user.extra:
        info["extra"] = {key: list(values) for key, values in user.extra}
    return info


def _ip(text: str) -> str | None:
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)  # as Go prints an IPv4-mapped address
    return str(address)


def source_ips(request: web.Request) -> list[str]:
    """kube's SourceIPs: X-Forwarded-For's addresses, X-Real-Ip's if not among
    them, and the peer's unless it is the last already."""
    found: list[str] = []
    for part in request.headers.get("X-Forwarded-For", "").split(","):
        if (ip := _ip(part)) is not None:
            found.append(ip)
    real = _ip(request.headers.get("X-Real-Ip", ""))
    if real is not None and real not in found:
        found.append(real)
    peer = _ip(request.remote or "")
    if peer is not None and (not found or found[-1] != peer):
        found.append(peer)
    return found


def object_ref(attributes: Attributes) -> Obj | None:
    """The resource a resource request names (None for any other request)."""
    if not attributes.resource_request:
        return None
    return {
        "resource": attributes.resource,
        "namespace": attributes.namespace,
        "name": attributes.name,
        "apiGroup": attributes.api_group,
        "apiVersion": attributes.api_version,
        "subresource": attributes.subresource,
    }


def ordered_ref(ref: Mapping[str, str]) -> Obj:
    """ref as kube writes it: in the struct's order, empty fields left out."""
    return {key: value for key in REF_KEYS if (value := ref.get(key))}


def response_status(status: Mapping[str, Any], code: int) -> Obj:
    """What kube keeps of a Status answered (its bounded fields, not its list
    metadata), with the HTTP code written."""
    kept: Obj = {"metadata": {}}
    for key in ("status", "message", "reason", "details"):
        if value := status.get(key):
            kept[key] = value
    kept["code"] = code
    return kept


def micro_time(seconds: float) -> str:
    """kube's MicroTime: RFC 3339 in UTC with microseconds."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _without_managed_fields(obj: Any) -> Any:
    """obj (or each item of a list) without metadata.managedFields: a copy, as
    the object may be in another event still to be written."""
    if not isinstance(obj, dict):
        return obj
    copy = dict(obj)
    meta = copy.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        copy["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    items = copy.get("items")
    if isinstance(items, list):
        copy["items"] = [_without_managed_fields(item) for item in items]
    return copy


def encode(event: Obj, omit_managed_fields: bool) -> bytes:
    """An event's log line. event's timestamps are seconds, and its objects
    either decoded JSON or a body's JSON bytes, which go in as they are
    unless managed fields are to be left out."""
    for key in _TIMESTAMPS:
        event[key] = micro_time(event[key])
    for key in (REQUEST_OBJECT, RESPONSE_OBJECT):
        value = event.get(key)
        if value is None:
            continue
        if isinstance(value, bytes):
            value = orjson.loads(value) if omit_managed_fields else orjson.Fragment(value.strip())
        if omit_managed_fields:
            value = _without_managed_fields(value)
        event[key] = value
    return gomarshal.escaped(orjson.dumps(event)) + b"\n"
