"""A PATCH as a build of the update loop (services/registry/generic/update.py):
the patch applied to the object as read, then taken as a PUT of the result
would be, so a patch is one read, one write, and one more of each per
conflict. Server-side apply makes the object when there is none, and applies
again when another create wins the race.

A patch that names a resourceVersion (in metadata) other than the one read is
a Conflict at once, as kube's update of a patched object: the version was the
client's precondition."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from services.registry.generic.codec import Codec
from services.registry.generic.patching import apply, merge
from services.registry.generic.scale import scale_of
from services.registry.generic.update import Build, UpdatedObjectInfo
from services.registry.generic.update_builds import put_info
from strata.api import errors, patch_types
from strata.api.errors import StatusError
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
        """What a PUT of patched makes of old; a Conflict when patched names
        another resourceVersion than old's."""
        read_at = old["metadata"].get("resourceVersion")
        metadata = patched.setdefault("metadata", {})
        if not isinstance(metadata, dict):
            raise errors.bad_request("metadata must be an object")
        metadata.setdefault("resourceVersion", read_at)
        put = put_info(self._codec, namespace, name, orjson.dumps(patched), subresource)
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
            patched = merge.apply(patch.type, view, patch.body, rules or merge.NO_RULES)
            return self._as_put(patched, old, namespace, name, subresource)

        return build

    async def apply(
        self, patch: Patch, namespace: str, name: str, manager: str, update: Update, create: Create
    ) -> tuple[bytes, bool]:
        """Server-side apply under manager's name: the object as served, and
        whether the apply created it."""
        try:
            applied = apply.check_applied(orjson.loads(patch.body), name)
        except orjson.JSONDecodeError as e:
            raise errors.bad_request(f"error decoding the applied configuration: {e}") from None
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
                return await update(UpdatedObjectInfo(build=build), ""), False
            except StatusError as e:
                if e.reason != "NotFound":
                    raise
            try:
                return await create(orjson.dumps(merged(None)), ""), True
            except StatusError as e:
                # Another create came between the read and this one: apply again.
                if e.reason != "AlreadyExists":
                    raise
