"""Kubernetes `Status` errors, shaped as k8s.io/apimachinery's api/errors builds them.

The registry raises these; the gRPC layer carries their JSON to the gateway,
which renders them unchanged. Messages, reasons and detail fields follow
kube-apiserver's so clients (kubectl, client-go, the Python client) print and
classify them as they would against Kubernetes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson


@dataclass(frozen=True, kw_only=True)
class Cause:
    """One field-level reason inside an Invalid status (a StatusCause)."""

    reason: str
    message: str
    field: str

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}


# Not frozen: Python sets __traceback__ and friends on exceptions as they propagate.
@dataclass(kw_only=True, eq=False)
class StatusError(Exception):
    """A refusal that becomes a `Status` object with an HTTP code."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    retry_after_seconds: int | None = None
    # ListMeta for the Status (an expired list's inconsistent continue token).
    list_meta: dict[str, Any] = field(default_factory=dict)
    # No details at all (kube's NewBadRequest, NewGone...: a nil Details, which
    # its JSON leaves out), where an empty one is still written as {}.
    bare: bool = False

    def __str__(self) -> str:
        return self.message

    def status(self) -> dict[str, Any]:
        """The Status with its keys in the order kube's JSON writes them."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": self.list_meta,
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # omitempty, as a plain error's 500 has none
            body["reason"] = self.reason
        if not self.bare:
            body["details"] = ordered_details(self.details)
        body["code"] = self.code
        return body

    def to_json(self) -> bytes:
        return orjson.dumps(self.status())

    @classmethod
    def from_json(cls, data: bytes) -> StatusError:
        body = orjson.loads(data)
        details = dict(body.get("details") or {})
        retry_after = details.get("retryAfterSeconds")
        return cls(
            code=int(body.get("code", 500)),
            reason=str(body.get("reason", "")),
            message=str(body.get("message", "")),
            details=details,
            # The Retry-After header kube sends beside such a Status.
            retry_after_seconds=retry_after if isinstance(retry_after, int) else None,
            list_meta=dict(body.get("metadata") or {}),
            bare="details" not in body,
        )


# StatusDetails' fields in the order of the Go struct, which is the order its
# JSON has them in; each is omitempty.
_DETAIL_KEYS = ("name", "group", "kind", "uid", "causes", "retryAfterSeconds")


def ordered_details(details: dict[str, Any]) -> dict[str, Any]:
    """details as kube writes a StatusDetails: name, group, kind, uid, causes,
    retryAfterSeconds, each left out when empty."""
    ordered = {key: details[key] for key in _DETAIL_KEYS if details.get(key)}
    ordered.update((k, v) for k, v in details.items() if k not in _DETAIL_KEYS)
    return ordered


def _details(resource: str, name: str, group: str = "") -> dict[str, Any]:
    return {"name": name, "group": group, "kind": resource}


def _qualified(resource: str, group: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(resource: str, name: str, group: str = "") -> StatusError:
    return StatusError(
        code=404,
        reason="NotFound",
        message=f'{_qualified(resource, group)} "{name}" not found',
        details=_details(resource, name, group),
    )


def path_not_found() -> StatusError:
    return StatusError(
        code=404, reason="NotFound", message="the server could not find the requested resource"
    )


def forbidden(
    resource: str, name: str, detail: str, group: str = "", causes: tuple[Cause, ...] = ()
) -> StatusError:
    details = _details(resource, name, group)
    if causes:
        details["causes"] = [c.as_dict() for c in causes]
    # kube's NewForbidden names no object when there is none (a generateName create).
    named = f' "{name}"' if name else ""
    return StatusError(
        code=403,
        reason="Forbidden",
        message=f"{_qualified(resource, group)}{named} is forbidden: {detail}",
        details=details,
    )


def already_exists(resource: str, name: str, group: str = "") -> StatusError:
    return StatusError(
        code=409,
        reason="AlreadyExists",
        message=f'{_qualified(resource, group)} "{name}" already exists',
        details=_details(resource, name, group),
    )


def conflict(resource: str, name: str, detail: str, group: str = "") -> StatusError:
    return StatusError(
        code=409,
        reason="Conflict",
        message=(
            f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {detail}'
        ),
        details=_details(resource, name, group),
    )


def apply_conflict(message: str, causes: list[Cause]) -> StatusError:
    """A server-side apply that would change fields other managers own."""
    return StatusError(
        code=409,
        reason="Conflict",
        message=message,
        details={"causes": [c.as_dict() for c in causes]},
    )


OBJECT_MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, name: str, causes: list[Cause], group: str = "") -> StatusError:
    listed = [f"{c.field}: {c.message}" for c in causes]
    summary = listed[0] if len(listed) == 1 else "[" + ", ".join(listed) + "]"
    details: dict[str, Any] = {"name": name, "group": group, "kind": kind}
    details["causes"] = [c.as_dict() for c in causes]
    return StatusError(
        code=422,
        reason="Invalid",
        message=f'{kind}.{group} "{name}" is invalid: {summary}'
        if group
        else f'{kind} "{name}" is invalid: {summary}',
        details=details,
    )


# How much of a body kube's summarizeData shows.
_SUMMARY_BYTES = 30


def summarize_data(body: bytes) -> str:
    """kube's summarizeData, as its decoding errors quote a body: the first 30
    bytes, as text for a JSON object, else in hex, and " ..." when there are more."""
    if not body:
        return "<empty>"
    shown = body[:_SUMMARY_BYTES]
    text = shown.decode(errors="replace") if body[:1] == b"{" else shown.hex()
    return text + " ..." if len(body) > _SUMMARY_BYTES else text


def bad_request(message: str) -> StatusError:
    return StatusError(code=400, reason="BadRequest", message=message, bare=True)


def undecodable(kind: str, version: str, detail: str) -> StatusError:
    """kube's 400 for a body its decoder cannot make an object of (transformDecodeError)."""
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}')


def gone(message: str, continue_token: str = "") -> StatusError:
    return StatusError(
        code=410,
        reason="Expired",
        message=message,
        list_meta={"continue": continue_token} if continue_token else {},
        bare=True,
    )


def unauthorized() -> StatusError:
    return StatusError(code=401, reason="Unauthorized", message="Unauthorized", bare=True)


def method_not_allowed() -> StatusError:
    """kube's answer to a method a path has no route for (go-restful's 405)."""
    return StatusError(
        code=405,
        reason="MethodNotAllowed",
        message="the server does not allow this method on the requested resource",
    )


def too_large(message: str) -> StatusError:
    return StatusError(code=413, reason="RequestEntityTooLarge", message=message, bare=True)


def _retry_later(code: int, reason: str, message: str, seconds: int) -> StatusError:
    return StatusError(
        code=code,
        reason=reason,
        message=message,
        details={"retryAfterSeconds": seconds},
        retry_after_seconds=seconds,
    )


def timeout(message: str, retry_after_seconds: int = 1) -> StatusError:
    return _retry_later(504, "Timeout", message, retry_after_seconds)


def too_large_resource_version(message: str) -> StatusError:
    """kube's answer to a read of a resourceVersion storage has not reached in
    time (storage.NewTooLargeResourceVersionError): a Timeout whose one cause
    says so, with a reason and message but no field, retried after a second."""
    return StatusError(
        code=504,
        reason="Timeout",
        message=f"Timeout: {message}",
        details={
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
        retry_after_seconds=1,
    )


def too_many_requests(message: str, retry_after_seconds: int = 1) -> StatusError:
    return _retry_later(429, "TooManyRequests", message, retry_after_seconds)


def service_unavailable(message: str, retry_after_seconds: int | None = None) -> StatusError:
    """kube's NewServiceUnavailable; with retry_after_seconds (a dependency that
    is away: storage, the registry) it also asks the client to come back then."""
    if retry_after_seconds is not None:
        return _retry_later(503, "ServiceUnavailable", message, retry_after_seconds)
    return StatusError(code=503, reason="ServiceUnavailable", message=message, bare=True)


def internal(message: str) -> StatusError:
    return StatusError(
        code=500,
        reason="InternalError",
        message=f"Internal error occurred: {message}",
        details={"causes": [{"message": message}]},
    )


def success(resource: str, name: str, uid: str, group: str = "") -> dict[str, Any]:
    """The Status a delete returns for resources that do not return the object."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": ordered_details({**_details(resource, name, group), "uid": uid}),
    }
