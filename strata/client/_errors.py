"""API errors as a client meets them: the `Status` a server answers a refusal
with, restored as a typed exception (NotFound, Conflict, Invalid with its
causes, Expired, TooManyRequests with its Retry-After...) so callers catch the
kind of failure rather than compare codes. Each is a strata.api StatusError,
the same shape the server side raises."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import orjson

from strata.api.errors import Cause, StatusError


class ApiError(StatusError):
    """A request the API server refused (or could not answer)."""

    @property
    def causes(self) -> list[Cause]:
        return [
            Cause(
                reason=str(c.get("reason", "")),
                message=str(c.get("message", "")),
                field=str(c.get("field", "")),
            )
            for c in self.details.get("causes") or ()
            if isinstance(c, dict)
        ]


class BadRequest(ApiError):
    pass


class Unauthorized(ApiError):
    pass


class Forbidden(ApiError):
    pass


class NotFound(ApiError):
    pass


class MethodNotAllowed(ApiError):
    pass


class AlreadyExists(ApiError):
    pass


class Conflict(ApiError):
    pass


class Expired(ApiError):
    """410: the resourceVersion asked for is older than the server keeps
    (a watch or list must start over)."""


class RequestEntityTooLarge(ApiError):
    pass


class UnsupportedMediaType(ApiError):
    pass


class Invalid(ApiError):
    pass


class TooManyRequests(ApiError):
    pass


class InternalError(ApiError):
    pass


class ServiceUnavailable(ApiError):
    pass


class Timeout(ApiError):
    pass


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Expired": Expired,
    "Gone": Expired,
    "RequestEntityTooLarge": RequestEntityTooLarge,
    "UnsupportedMediaType": UnsupportedMediaType,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
    "InternalError": InternalError,
    "ServiceUnavailable": ServiceUnavailable,
    "Timeout": Timeout,
}
_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Expired,
    413: RequestEntityTooLarge,
    415: UnsupportedMediaType,
    422: Invalid,
    429: TooManyRequests,
    500: InternalError,
    503: ServiceUnavailable,
    504: Timeout,
}


def _retry_after(headers: Mapping[str, str], details: Mapping[str, Any]) -> int | None:
    given = headers.get("Retry-After") or details.get("retryAfterSeconds")
    try:
        return max(0, int(given)) if given is not None else None
    except (TypeError, ValueError):
        return None


def api_error(code: int, body: bytes, headers: Mapping[str, str] | None = None) -> ApiError:
    """The typed error for a response: its Status when the body is one, else
    what its code says (with the body as the message)."""
    headers = headers or {}
    status: Any = None
    with contextlib.suppress(orjson.JSONDecodeError):
        status = orjson.loads(body) if body else None
    if isinstance(status, dict) and status.get("kind") == "Status":
        reason = str(status.get("reason", ""))
        details = dict(status.get("details") or {})
        cls = _BY_REASON.get(reason) or _BY_CODE.get(code, ApiError)
        return cls(
            code=int(status.get("code") or code),
            reason=reason,
            message=str(status.get("message", "")),
            details=details,
            retry_after_seconds=_retry_after(headers, details),
            list_meta=dict(status.get("metadata") or {}),
        )
    cls = _BY_CODE.get(code, ApiError)
    text = body.decode(errors="replace").strip()
    return cls(
        code=code,
        reason=cls.__name__ if cls is not ApiError else "Unknown",
        message=text or f"the server answered {code}",
        retry_after_seconds=_retry_after(headers, {}),
    )
