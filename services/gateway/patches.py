"""PATCH bodies applied to an object's JSON, as kube-apiserver applies them:
JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch.

A strategic merge patch merges lists of the built-in types by their merge
keys (containers by name, ports by port...) where a merge patch would replace
them, and understands kube's directives: `$patch: replace|delete`,
`$retainKeys`, `$deleteFromPrimitiveList/<list>` and `$setElementOrder/<list>`.
The merge keys are those of the built-in types strata serves, by field path
("[]" stands for every item of a list).
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from strata.api import errors
from strata.api.errors import StatusError

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
SUPPORTED = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)
FOR_CUSTOM = (JSON_PATCH, MERGE_PATCH)

_CONTAINER_LISTS = {"ports": "containerPort", "env": "name", "volumeMounts": "mountPath"}
_POD_SPEC_LISTS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
}


def _pod_spec_keys(prefix: str) -> dict[str, str]:
    keys = {f"{prefix}.{field}": key for field, key in _POD_SPEC_LISTS.items()}
    for containers in ("containers", "initContainers"):
        for field, key in _CONTAINER_LISTS.items():
            keys[f"{prefix}.{containers}[].{field}"] = key
    return keys


# Lists merged item by item, by the field that identifies an item.
MERGE_KEYS: dict[str, str] = {
    "metadata.ownerReferences": "uid",
    "status.conditions": "type",
    # core/v1 ServiceAccount and Service
    "secrets": "name",
    "imagePullSecrets": "name",
    "spec.ports": "port",
    **_pod_spec_keys("spec.template.spec"),
}
# Lists of strings merged as sets.
PRIMITIVE_MERGE = frozenset({"metadata.finalizers"})

_PATCH = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_FROM = "$deleteFromPrimitiveList/"
_ORDER = "$setElementOrder/"


def _unprocessable(message: str) -> StatusError:
    """kube's answer to a patch that cannot be applied (422 with the cause)."""
    return StatusError(
        code=422,
        reason="Invalid",
        message=f"the server rejected our request due to an error in our request: {message}",
        details={"causes": [{"reason": "UnexpectedServerResponse", "message": message}]},
    )


def _decoded(patch: bytes) -> Any:
    try:
        return orjson.loads(patch)
    except orjson.JSONDecodeError as e:
        raise errors.bad_request(f"error decoding patch: {e}") from None


def merge_patch(original: Any, patch: Any) -> Any:
    """RFC 7386: maps merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _merge_map(original: dict[str, Any], patch: dict[str, Any], path: str) -> dict[str, Any]:
    directive = patch.get(_PATCH)
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != _PATCH}
    if directive is not None and directive != "merge":
        raise errors.bad_request(f"Unknown patch type: {directive} in map at {path or '.'}")
    result = dict(original)
    retain = patch.get(_RETAIN_KEYS)
    for key, value in patch.items():
        if key in (_PATCH, _RETAIN_KEYS) or key.startswith(_ORDER):
            continue
        if key.startswith(_DELETE_FROM):
            field = key.removeprefix(_DELETE_FROM)
            if not isinstance(value, list):
                raise errors.bad_request(f"invalid patch: {key} must be a list")
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        child = f"{path}.{key}" if path else key
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge_map(result[key], value, child)
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, child)
        elif isinstance(value, dict):
            result[key] = _merge_map({}, value, child)
        else:
            result[key] = value
    for key, order in patch.items():
        if key.startswith(_ORDER):
            field = key.removeprefix(_ORDER)
            child = f"{path}.{field}" if path else field
            if isinstance(result.get(field), list) and isinstance(order, list):
                result[field] = _ordered(result[field], order, MERGE_KEYS.get(child))
    if retain is not None:
        if not isinstance(retain, list):
            raise errors.bad_request("invalid patch: $retainKeys must be a list")
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(original: Any, patch: list[Any], path: str) -> list[Any]:
    items = list(original) if isinstance(original, list) else []
    if path in PRIMITIVE_MERGE:
        return items + [v for v in patch if v not in items]
    key = MERGE_KEYS.get(path)
    if key is None:
        return [_merge_map({}, v, f"{path}[]") if isinstance(v, dict) else v for v in patch]
    if any(isinstance(v, dict) and v.get(_PATCH) == "replace" for v in patch):
        return [v for v in patch if not (isinstance(v, dict) and _PATCH in v)]
    for entry in patch:
        if not isinstance(entry, dict):
            raise _unprocessable(f"the list at {path} holds maps merged by {key}")
        if key not in entry:
            raise _unprocessable(f"map: {entry} does not contain declared merge key: {key}")
        at = next((i for i, item in enumerate(items) if item.get(key) == entry[key]), None)
        if entry.get(_PATCH) == "delete":
            if at is not None:
                del items[at]
        elif at is None:
            items.append(_merge_map({}, entry, f"{path}[]"))
        else:
            items[at] = _merge_map(items[at], entry, f"{path}[]")
    return items


def _ordered(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """$setElementOrder: the items the order names, in its order, then the rest."""

    def identity(item: Any) -> bytes:
        return orjson.dumps(item.get(key) if key is not None and isinstance(item, dict) else item)

    rank = {identity(o): i for i, o in enumerate(order)}
    named = sorted((i for i in items if identity(i) in rank), key=lambda i: rank[identity(i)])
    return named + [i for i in items if identity(i) not in rank]


def strategic_merge_patch(original: dict[str, Any], patch: Any) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise errors.bad_request("invalid patch: a strategic merge patch must be a JSON object")
    return _merge_map(original, patch, "")


def apply(content_type: str, original: bytes, patch: bytes) -> bytes:
    """original with patch applied as content_type says; 400 for a patch that
    cannot be read, 422 for one that cannot be applied."""
    document = orjson.loads(original)
    if content_type == JSON_PATCH:
        operations = _decoded(patch)
        if not isinstance(operations, list):
            raise errors.bad_request(
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
            )
        try:
            patched = jsonpatch.JsonPatch(operations).apply(copy.deepcopy(document))
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as e:
            raise _unprocessable(str(e)) from None
        except (TypeError, KeyError, AttributeError) as e:
            raise errors.bad_request(f"invalid JSON patch: {e}") from None
    elif content_type == MERGE_PATCH:
        patched = merge_patch(document, _decoded(patch))
    elif content_type == STRATEGIC_MERGE_PATCH:
        patched = strategic_merge_patch(document, _decoded(patch))
    else:
        raise errors.unsupported_media_type(content_type)
    if not isinstance(patched, dict):
        raise _unprocessable("the patched object is not a JSON object")
    return orjson.dumps(patched)
