"""A PATCH as a build of the update loop (services/registry/generic/update.py):
the patch applied to the object as read, then taken as a PUT of the result
would be, so a patch is one read, one write, and one more of each per
conflict. Server-side apply makes the object when there is none, and applies
again when another create wins the race.

A patch that names a resourceVersion (in metadata) other than the one read is
a Conflict at once, as kube's update of a patched object: the version was the
client's precondition. A patched object kube's decoder cannot read (a map
where a ConfigMap's data holds strings) is kube's 422 on the field "patch",
quoting the whole patched JSON (a strategic merge patch: the patch as Go
prints it), not the 400 a PUT of the same object gets."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from services.registry.generic.codec import Codec
from services.registry.generic.patching import apply, merge
from services.registry.generic.scale import scale_of
from services.registry.generic.update import Build, UpdatedObjectInfo
from services.registry.generic.update_builds import put_info
from strata.api import deep_json, errors, patch_types
from strata.api.errors import Cause, StatusError
from strata.api.goquote import quote
from strata.api.managed_fields import ListShapes
from strata.storage import Conflict

Obj = dict[str, Any]
# The update loop's entry (Store.guaranteed_update) with a build, and a create
# of a body: each answers the object as served.
Update = Callable[[UpdatedObjectInfo, str], Awaitable[bytes]]
Create = Callable[[bytes, str], Awaitable[bytes]]


@dataclass(frozen=True)
class Patch:
    """A PATCH as the gateway hands it on: its media type, its body (an apply's
    configuration as JSON), and an apply's force."""

    type: str
    body: bytes
    force: bool = False


class Patcher:
    """The patches of one resource's objects."""

    def __init__(self, codec: Codec, shapes: ListShapes) -> None:
        self._codec = codec
        self._shapes = shapes
        self._rules: merge.MergeRules | None = None

    def _merge_rules(self) -> merge.MergeRules:
        if self._rules is None:  # read off the schema on the first strategic merge patch
            self._rules = merge.rules_for(self._codec.resource.schema)
        return self._rules

    def _as_put(self, patched: Obj, old: Obj, namespace: str, name: str, subresource: str) -> Obj:
        """What a PUT of patched makes of old (patched left as it is); a
        Conflict when patched names another resourceVersion than old's."""
        read_at = old["metadata"].get("resourceVersion")
        metadata = patched.get("metadata")
        if metadata is None or isinstance(metadata, dict):  # else the decoder refuses it
            given = metadata or {}
            metadata = {**given, "resourceVersion": given.get("resourceVersion", read_at)}
            patched = {**patched, "metadata": metadata}
        body = deep_json.dumps(patched)  # a patch's values may nest past orjson's depth
        put = put_info(self._codec, namespace, name, body, subresource)
        if put.resource_version != read_at:
            raise Conflict(self._codec.resource.key(namespace, name), "stale resourceVersion")
        return put.build(old)

    def patched(self, patch: Patch, namespace: str, name: str, subresource: str) -> Build:
        """A JSON, merge or strategic merge patch of the object (or of its
        status or scale) as a build of the update loop."""
        r = self._codec.resource
        rules = self._merge_rules() if patch.type == patch_types.STRATEGIC_MERGE_PATCH else None

        def build(old: Obj) -> Obj:
            view = old
            if subresource == "scale":
                assert r.scale is not None
                view = scale_of(r.scale, old)
            applied = merge.applied(patch.type, view, patch.body, rules or merge.NO_RULES)
            try:
                return self._as_put(applied.obj, old, namespace, name, subresource)
            except StatusError as e:
                if (problem := _undecodable(e)) is None:
                    raise
                raise _patch_invalid(patch.type, applied, problem) from None

        return build

    def _check_depth(self, applied: Obj) -> None:
        """kube's 500 for an applied configuration its types cannot hold, for
        one nested past what the field manager walks (no kind's schema nests
        so deep: kube's words would name the first field that is not one)."""
        if deep_json.depth(applied) <= _APPLY_DEPTH:
            return
        r = self._codec.resource
        metadata = applied["metadata"]
        who = f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
        raise StatusError(
            code=500,
            reason="",
            message=(
                f"failed to create typed patch object ({who}; {r.group}/{r.version}, "
                f"Kind={r.kind}): the configuration nests more than {_APPLY_DEPTH} levels deep"
            ),
            bare=True,
        )

    async def apply(
        self, patch: Patch, namespace: str, name: str, manager: str, update: Update, create: Create
    ) -> tuple[bytes, bool]:
        """Server-side apply under manager's name: the object as served, and
        whether the apply created it."""
        try:
            applied = apply.check_applied(orjson.loads(patch.body), name)
        except orjson.JSONDecodeError as e:
            raise errors.bad_request(f"error decoding the applied configuration: {e}") from None
        self._check_depth(applied)
        api_version = self._codec.resource.api_version

        def merged(live: Obj | None) -> Obj:
            return apply.apply(
                live,
                applied,
                manager=manager,
                force=patch.force,
                api_version=api_version,
                shapes=self._shapes,
            )

        def build(old: Obj) -> Obj:
            return self._as_put(merged(old), old, namespace, name, "")

        while True:
            try:
                info = UpdatedObjectInfo(build=build, size=len(patch.body))
                return await update(info, ""), False
            except StatusError as e:
                if e.reason != "NotFound":
                    raise
            try:
                return await create(orjson.dumps(merged(None)), ""), True
            except StatusError as e:
                # Another create came between the read and this one: apply again.
                if e.reason != "AlreadyExists":
                    raise


# An applied configuration nested deeper is refused before the field manager's
# walks (recursive, as deep as the configuration).
_APPLY_DEPTH = 100
# kube's decoder's 400 (errors.undecodable), whose reason a patch's 422 gives.
_UNDECODABLE = re.compile(r'(\S+) in version "[^"]*" cannot be handled as a \1: (.*)', re.DOTALL)
# Go's encoding/json type error, and the Go types the unstructured converter
# (which reads a strategic merge patch's result) names by their kind.
_TYPE_ERROR = re.compile(r"json: cannot unmarshal (\w+) into Go struct field \S+ of type (\S+)")
_INTEGERS = tuple(f"{u}int{n}" for u in ("", "u") for n in ("", "8", "16", "32", "64"))
_PRIMITIVES = frozenset(("string", "bool", "float32", "float64", *_INTEGERS))


def _undecodable(error: StatusError) -> str | None:
    """What kube's decoder found wrong with an object, if error is its 400."""
    found = _UNDECODABLE.fullmatch(error.message) if error.code == 400 else None
    if found is None or found[2].startswith("strict decoding error:"):
        return None
    return found[2]


def _converter_words(problem: str) -> str:
    """A decoding error as kube's unstructured converter words it, where its
    words are known: a map or list where a scalar goes, a scalar or list where
    a map goes; others as the JSON decoder words them."""
    found = _TYPE_ERROR.fullmatch(problem)
    if found is None:
        return problem
    given, go_type = found[1], found[2]
    if given in ("object", "array") and go_type in _PRIMITIVES:
        return f"unrecognized type: {go_type}"
    if given == "array" and go_type.startswith("map["):
        return "cannot restore map from slice"
    if given == "object" and go_type.startswith("[]"):
        return "cannot restore slice from map"
    return problem


def _patch_invalid(content_type: str, applied: merge.Applied, problem: str) -> StatusError:
    """kube's 422 for a patch whose result its decoder cannot read: a JSON or
    merge patch's quoting the whole patched JSON (Go's bytes, maps in the
    order kube writes them), a strategic merge patch's the patch as Go prints
    it and the converter's words."""
    if content_type == patch_types.STRATEGIC_MERGE_PATCH:
        value = deep_json.go_print(applied.patch)
        problem = _converter_words(problem)
    else:
        value = deep_json.encode(applied.obj, applied.styles).decode()
    cause = Cause(
        reason="FieldValueInvalid",
        message=f"Invalid value: {quote(value)}: {problem}",
        field="patch",
    )
    return errors.invalid("", "", [cause])
