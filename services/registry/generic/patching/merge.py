"""PATCH bodies applied to an object, as kube-apiserver applies them: JSON patch
(RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch.

A strategic merge patch merges lists of the built-in types by their merge
keys (containers by name, ports by port...) where a merge patch would replace
them, and understands kube's directives: `$patch: replace|delete`,
`$retainKeys`, `$deleteFromPrimitiveList/<list>` and `$setElementOrder/<list>`.
The merge keys are read off the kind's schema (x-kubernetes-patch-merge-key and
-strategy, as clients read them off the OpenAPI).

A patch is read as deep as Go reads JSON (10,000 levels, refused past them in
Go's words); JSON and merge patches are applied without recursion
(documents.py), and a strategic merge patch recurses only as deep as the
object it merges into, plus _FRESH_DEPTH levels of what it adds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import jsonpointer
import orjson

from services.registry.generic.patching import documents
from strata.api import deep_json, errors
from strata.api.deep_json import Style
from strata.api.errors import StatusError
from strata.api.patch_types import JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH
from strata.api.schemas import OBJECT_META

Obj = dict[str, Any]


@dataclass(frozen=True)
class MergeRules:
    """How a strategic merge patch merges a kind's lists, read off its schema:
    by dotted path ("[]" for every item of a list), the lists merged item by
    item by a key, and the lists of strings merged as sets."""

    keys: dict[str, str] = field(default_factory=dict)
    sets: frozenset[str] = frozenset()


NO_RULES = MergeRules()
_MERGE_KEY = "x-kubernetes-patch-merge-key"
_STRATEGY = "x-kubernetes-patch-strategy"


def _walk(schema: dict[str, Any], path: str, keys: dict[str, str], sets: set[str]) -> None:
    for name, child in (schema.get("properties") or {}).items():
        _walk(child, f"{path}.{name}" if path else name, keys, sets)
    if schema.get("type") == "array" and isinstance(items := schema.get("items"), dict):
        strategy = str(schema.get(_STRATEGY, ""))
        if key := schema.get(_MERGE_KEY):
            keys[path] = str(key)
        elif "merge" in strategy.split(","):
            sets.add(path)
        _walk(items, f"{path}[]", keys, sets)


def rules_for(kind_schema: Obj | None) -> MergeRules:
    """The merge rules of a kind with this OpenAPI schema; every kind's
    metadata is ObjectMeta."""
    schema = kind_schema or {}
    properties = {**(schema.get("properties") or {}), "metadata": OBJECT_META}
    keys: dict[str, str] = {}
    sets: set[str] = set()
    _walk({**schema, "properties": properties}, "", keys, sets)
    return MergeRules(keys, frozenset(sets))


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


def _decoded(patch: bytes, content_type: str) -> Any:
    """The patch, or kube's 400: Go's words past its nesting depth (a strategic
    merge patch's without a prefix)."""
    try:
        return deep_json.loads(patch)
    except deep_json.NestingError as e:
        prefix = "" if content_type == STRATEGIC_MERGE_PATCH else "error decoding patch: "
        raise errors.bad_request(f"{prefix}{e}") from None
    except orjson.JSONDecodeError as e:
        raise errors.bad_request(f"error decoding patch: {e}") from None


# How deep a strategic merge patch's values are merged by recursion: a value
# added deeper has only its nulls and directives dropped, with a stack.
_FRESH_DEPTH = 50
_DIRECTIVES = (_PATCH, _RETAIN_KEYS)
_DIRECTIVE_PREFIXES = (_DELETE_FROM, _ORDER)


def _stripped(value: Any) -> Any:
    """A value added deep in a strategic merge patch: without its maps' nulls
    and directives (kube's removeDirectives), walked with a stack."""
    root = value = dict(value) if isinstance(value, dict) else list(value)
    work = [value]
    while work:
        node = work.pop()
        if isinstance(node, dict):
            for key in list(node):
                item = node[key]
                if item is None or key in _DIRECTIVES or key.startswith(_DIRECTIVE_PREFIXES):
                    del node[key]
                elif isinstance(item, dict | list):
                    item = node[key] = dict(item) if isinstance(item, dict) else list(item)
                    work.append(item)
        else:
            for i, item in enumerate(node):
                if isinstance(item, dict | list):
                    item = node[i] = dict(item) if isinstance(item, dict) else list(item)
                    work.append(item)
    return root


def _fresh(value: Any, path: str, rules: MergeRules, depth: int) -> Any:
    """A map the original does not have, as the patch gives it."""
    if depth > _FRESH_DEPTH:
        return _stripped(value)
    return _merge_map({}, value, path, rules, depth)


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], path: str, rules: MergeRules, depth: int = 0
) -> dict[str, Any]:
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
            result[key] = _merge_map(result[key], value, child, rules, depth + 1)
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, child, rules, depth + 1)
        elif isinstance(value, dict):
            result[key] = _fresh(value, child, rules, depth + 1)
        else:
            result[key] = value
    for key, order in patch.items():
        if key.startswith(_ORDER):
            field = key.removeprefix(_ORDER)
            child = f"{path}.{field}" if path else field
            if isinstance(result.get(field), list) and isinstance(order, list):
                result[field] = _ordered(result[field], order, rules.keys.get(child))
    if retain is not None:
        if not isinstance(retain, list):
            raise errors.bad_request("invalid patch: $retainKeys must be a list")
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(
    original: Any, patch: list[Any], path: str, rules: MergeRules, depth: int
) -> list[Any]:
    items = list(original) if isinstance(original, list) else []
    if path in rules.sets:
        return items + [v for v in patch if v not in items]
    key = rules.keys.get(path)
    if key is None:
        if depth > _FRESH_DEPTH:
            stripped: list[Any] = _stripped(patch)
            return stripped
        return [
            _fresh(v, f"{path}[]", rules, depth + 1) if isinstance(v, dict) else v for v in patch
        ]
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
            items.append(_fresh(entry, f"{path}[]", rules, depth + 1))
        else:
            items[at] = _merge_map(items[at], entry, f"{path}[]", rules, depth + 1)
    return items


def _ordered(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """$setElementOrder: the items the order names, in its order, then the rest."""

    def identity(item: Any) -> bytes:
        return orjson.dumps(item.get(key) if key is not None and isinstance(item, dict) else item)

    rank = {identity(o): i for i, o in enumerate(order)}
    named = sorted((i for i in items if identity(i) in rank), key=lambda i: rank[identity(i)])
    return named + [i for i in items if identity(i) not in rank]


def strategic_merge_patch(
    original: dict[str, Any], patch: Any, rules: MergeRules = NO_RULES
) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise errors.bad_request("invalid patch: a strategic merge patch must be a JSON object")
    return _merge_map(original, patch, "", rules)


@dataclass(frozen=True)
class Applied:
    """A patch applied: the patched object and how kube writes its maps (a
    JSON or merge patch's; documents.Patched), and the patch as decoded."""

    obj: Obj
    styles: dict[int, Style]
    patch: Any


def _json_patch(document: Obj, operations: Any) -> documents.Patched:
    if not isinstance(operations, list):
        raise errors.bad_request(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    try:
        return documents.json_patch(document, operations)
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as e:
        raise _unprocessable(str(e)) from None
    except (TypeError, KeyError, AttributeError) as e:
        raise errors.bad_request(f"invalid JSON patch: {e}") from None


def applied(
    content_type: str, document: Obj, patch: bytes, rules: MergeRules = NO_RULES
) -> Applied:
    """document with patch applied as content_type says (a strategic merge
    patch merging lists as rules say), document itself left as it was; 400 for
    a patch that cannot be read, 422 for one that cannot be applied."""
    if content_type not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH):
        # The gateway lets no other type through.
        raise StatusError(
            code=415, reason="UnsupportedMediaType", message="415: Unsupported Media Type"
        )
    decoded = _decoded(patch, content_type)
    styles: dict[int, Style] = {}
    try:
        if content_type == JSON_PATCH:
            patched = _json_patch(document, decoded)
            result, styles = patched.obj, patched.styles
        elif content_type == STRATEGIC_MERGE_PATCH:
            result = strategic_merge_patch(document, decoded, rules)
        elif isinstance(decoded, dict):
            patched = documents.merge_patch(document, decoded)
            result, styles = patched.obj, patched.styles
        else:  # a merge patch that is no object replaces the document
            result = decoded
    except RecursionError:  # a comparison of values nested past Python's recursion
        raise _unprocessable("the patch nests its values too deeply to apply") from None
    if not isinstance(result, dict):
        raise _unprocessable("the patched object is not a JSON object")
    return Applied(result, styles, decoded)


def apply(content_type: str, document: Obj, patch: bytes, rules: MergeRules = NO_RULES) -> Obj:
    """The object applied() makes."""
    return applied(content_type, document, patch, rules).obj
