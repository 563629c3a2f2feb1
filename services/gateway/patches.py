"""What the gateway checks of a PATCH before the registry applies it (inside
its conflict loop, services/registry/generic/patching/): the patch type a route takes
(go-restful's 415 for any other), and kube's strict decoding errors of the
patch body itself, with what kube's 422 quotes of it."""

from __future__ import annotations

import orjson

from strata.api.deep_json import go_print
from strata.api.errors import StatusError
from strata.api.patch_types import CONSUMED, JSON_PATCH, STRATEGIC_MERGE_PATCH
from strata.api.strict_decoding import duplicate_fields, json_patch_errors

__all__ = [
    "CONSUMED",
    "go_print",
    "patch_media",
    "quoted",
    "strict_errors",
    "unsupported_media_type",
]


def patch_media(content_type: str) -> str:
    """A PATCH's Content-Type as kube tells patch types apart (parameters aside)."""
    return content_type.split(";")[0].strip().lower()


def unsupported_media_type() -> StatusError:
    """go-restful's 415 for a patch type a PATCH route does not consume, as
    kube's Status carries it (empty details)."""
    return StatusError(
        code=415, reason="UnsupportedMediaType", message="415: Unsupported Media Type"
    )


def strict_errors(content_type: str, patch: bytes) -> list[str]:
    """kube's strict decoding errors of the patch itself: a merge patch's
    duplicate fields, a JSON patch's operations' unknown and duplicate fields
    (a JSON patch's values are taken as given)."""
    if content_type == JSON_PATCH:
        return json_patch_errors(patch)
    return [f'duplicate field "{p}"' for p in duplicate_fields(patch)]


def quoted(content_type: str, patch: bytes) -> str:
    """What kube's 422 for a patch's strict decoding errors quotes as the patch:
    a strategic merge patch as Go prints its map, "" for the patched object
    itself (what a JSON or merge patch has quoted)."""
    if content_type == STRATEGIC_MERGE_PATCH:
        try:  # Go's %+v, printed with a stack: a patch may nest a thousand deep
            return go_print(orjson.loads(patch))
        except orjson.JSONDecodeError:  # refused with its own error when applied
            return ""
    return ""
