"""A request body made an object of the endpoint's kind, refused as kube's
decoder refuses it (k8s.io/apiserver's transformDecodeError).

kube reads a body in two steps, and its 400 says which one failed. First it
sniffs apiVersion and kind with Go's encoding/json: a body that is not JSON,
or not an object, or whose kind is not a string is "the object provided is
unrecognized (must be of type K): couldn't get version/kind; json parse error:
<Go's error> (<the body's first 30 bytes>)". Then, apiVersion and kind
defaulted from the endpoint, a kind the endpoint cannot take is "K2 in version
"V" cannot be handled as a K: <why>", where why is "unknown conversion" for a
kind kube's scheme knows in that version and "no kind ... is registered" for
one it does not.

Go's decoder refuses JSON nested past 10,000 levels ("invalid character '{'
exceeded max depth"), and reads anything less: strata.api.deep_json reads as
deep as Go does, where orjson stops at 1,024. A value of the wrong JSON type
in a ConfigMap's or Secret's maps, or in metadata's labels and annotations, is
refused in Go's words ("json: cannot unmarshal object into Go struct field
ConfigMap.data of type string"), which a patch's 422 quotes too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from services.registry.generic.declarations import Resource
from strata.api import deep_json, errors, gojson

Obj = dict[str, Any]

# The Go type kube sniffs apiVersion and kind into, as Go's errors name it.
_TYPE_META = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)
# Bodies up to this size get Go's exact syntax error (see _syntax_error).
_SCAN_LIMIT = 16 * 1024
_SCHEME = "pkg/api/legacyscheme/scheme.go:30"


@dataclass(frozen=True, kw_only=True)
class Scheme:
    """What kube's scheme holds that a decoder's refusal names: the kinds
    registered in each apiVersion (what strata serves of it), and the internal
    package each group's kinds convert to (core for the legacy group). The
    catalog of built-in resources makes one; without one, or for a group it does
    not name, a refusal is in strata's own words (as a custom resource's is)."""

    kinds: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    internal: Mapping[str, str] = dataclasses.field(default_factory=dict)


NO_SCHEME = Scheme()


def scheme_of(resources: Iterable[Resource], internal: Mapping[str, str]) -> Scheme:
    """The scheme of resources' kinds, each group converting to its internal package."""
    kinds: dict[str, frozenset[str]] = {}
    for r in resources:
        kinds[r.api_version] = kinds.get(r.api_version, frozenset()) | {r.kind}
    return Scheme(kinds=kinds, internal=internal)


def _unrecognized(resource: Resource, body: bytes, problem: str) -> errors.StatusError:
    return errors.bad_request(
        f"the object provided is unrecognized (must be of type {resource.kind}): "
        f"couldn't get version/kind; json parse error: {problem} ({errors.summarize_data(body)})"
    )


def _syntax_error(body: bytes, error: orjson.JSONDecodeError) -> str:
    """Go's words for a body orjson refused. Go's scanner here is a Python pass
    over every byte (about 2 us each), so it runs only on a refused body and only
    on one small enough that the pass stays a few milliseconds; a larger one, or
    one Go would read (invalid UTF-8), is answered with orjson's words."""
    if len(body) <= _SCAN_LIMIT and (problem := gojson.syntax_error(body)) is not None:
        return problem
    return str(error)


def _sniffed(body: bytes, resource: Resource) -> Obj:
    """The body as a JSON object with apiVersion and kind strings (or absent),
    or kube's 400 for the first step (Go's refusal past its nesting depth too)."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError as refused:
        try:
            obj = deep_json.past_orjson(body, refused)
        except deep_json.NestingError as e:
            raise _unrecognized(resource, body, str(e)) from None
        except orjson.JSONDecodeError as e:
            raise _unrecognized(resource, body, _syntax_error(body, e)) from None
    if obj is None:  # Go decodes null into an empty object
        return {}
    if not isinstance(obj, dict):
        kind = gojson.type_name(obj)
        problem = f"json: cannot unmarshal {kind} into Go value of type {_TYPE_META}"
        raise _unrecognized(resource, body, problem)
    for key, value in obj.items():
        if key in ("apiVersion", "kind") and value is not None and not isinstance(value, str):
            problem = (
                f"json: cannot unmarshal {gojson.type_name(value)} into Go struct field "
                f".{key} of type string"
            )
            raise _unrecognized(resource, body, problem)
    return obj


def _check_kind(kind: str, api_version: str, resource: Resource, scheme: Scheme) -> None:
    """kube's 400 for a kind or version the endpoint cannot take."""
    if kind == resource.kind and api_version == resource.api_version:
        return
    version = api_version.rpartition("/")[2]
    internal = scheme.internal.get(resource.group)
    if resource.custom or internal is None:
        # Custom resources and CRDs are not in kube's legacy scheme (their
        # answers are not recorded yet): strata's own words.
        if api_version != resource.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected "
                f"API version ({resource.api_version})"
            )
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({resource.kind})"
        )
    if kind in scheme.kinds.get(api_version, frozenset()):
        why = f"converting ({version}.{kind}) to ({internal}.{resource.kind}): unknown conversion"
    else:
        why = f'no kind "{kind}" is registered for version "{api_version}" in scheme "{_SCHEME}"'
    raise errors.bad_request(
        f'{kind} in version "{version}" cannot be handled as a {resource.kind}: {why}'
    )


def decode_body(body: bytes, resource: Resource, scheme: Scheme = NO_SCHEME) -> Obj:
    """The request body as an object of resource's kind, or 400 BadRequest (in
    the words of scheme, where it knows the resource's group)."""
    obj = _sniffed(body, resource)
    # As kube's decoder: a body without kind or apiVersion takes the endpoint's.
    obj["kind"] = obj.get("kind") or resource.kind
    obj["apiVersion"] = obj.get("apiVersion") or resource.api_version
    _check_kind(obj["kind"], obj["apiVersion"], resource, scheme)
    metadata = obj.setdefault("metadata", {})
    if resource.custom:  # no Go types: strata's own words
        if not isinstance(metadata, dict):
            raise errors.bad_request("metadata must be an object")
        for field in ("labels", "annotations"):
            if _map_error(metadata.get(field), field, "string") is not None:
                raise errors.bad_request(f"metadata.{field} must be a map of string to string")
        return obj
    if not isinstance(metadata, dict):
        wrong = _type_error(metadata, f"{resource.kind}.metadata", "v1.ObjectMeta")
        raise errors.undecodable(resource.kind, resource.version, wrong)
    fields = [(metadata, f, "ObjectMeta.metadata.", "string") for f in ("labels", "annotations")]
    maps = _MAPS.get(resource.kind, ()) if not resource.group else ()
    fields += [(obj, f, f"{resource.kind}.", value_type) for f, value_type in maps]
    for holder, field, struct, value_type in fields:
        if (problem := _map_error(holder.get(field), struct + field, value_type)) is not None:
            raise errors.undecodable(resource.kind, resource.version, problem)
    return obj


# The built-in kinds' maps of scalars kube's decoder holds their values to, by
# field, with their values' Go types ([]byte: base64 in a string).
_MAPS = {
    "ConfigMap": (("data", "string"), ("binaryData", "[]uint8")),
    "Secret": (("data", "[]uint8"), ("stringData", "string")),
}


def _type_error(value: Any, field: str, go_type: str) -> str:
    """Go's encoding/json error for a value it cannot store in a struct field."""
    return (
        f"json: cannot unmarshal {gojson.type_name(value)} into Go struct field "
        f"{field} of type {go_type}"
    )


def _map_error(value: Any, field: str, value_type: str) -> str | None:
    """Go's error for a map of strings (or of base64 bytes) that is not one, if
    it is not (a null, as a null value, is Go's zero)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        return _type_error(value, field, f"map[string]{value_type}")
    for item in value.values():
        if item is not None and not isinstance(item, str):
            return _type_error(item, field, value_type)
    return None
