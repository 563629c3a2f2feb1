"""A create, as kube's generic Store does it: the body decoded and its
server-owned metadata reset (BeforeCreate), the strategy's preparation and
validation, the namespace checks, write hooks, and a generated name tried again
while the one drawn is taken.
"""

from __future__ import annotations

import uuid
from typing import Any

from services.registry.generic import offload, warnings
from services.registry.generic.codec import Codec
from services.registry.generic.namespace_lifecycle import Namespaces, require_namespace
from services.registry.generic.storage_errors import interpreted
from services.registry.generic.strategy import Finish, WarningStrategy, WriteGuard, WriteHooks
from strata.api import errors, managed_fields, meta, names
from strata.api.errors import StatusError
from strata.storage import GetOptions, KeyExists, KeyNotFound, Storage

Obj = dict[str, Any]
_GENERATE_NAME_ATTEMPTS = 8
# What a client may not set on a new object.
_SERVER_OWNED = (
    "uid",
    "resourceVersion",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


async def _nothing_to_finish(stored: bool) -> None:
    pass


class Creator:
    def __init__(
        self,
        codec: Codec,
        storage: Storage,
        shapes: managed_fields.ListShapes,
        *,
        namespaces: Namespaces | None = None,
        hooks: WriteHooks | None = None,
        guard: WriteGuard | None = None,
        ttl_seconds: int = 0,
    ) -> None:
        self._codec = codec
        self._resource = codec.resource
        self._strategy = codec.resource.strategy
        # Found once: a runtime_checkable protocol's isinstance inspects the
        # class on every call.
        strategy = self._strategy
        self._warning = strategy if isinstance(strategy, WarningStrategy) else None
        self._storage = storage
        self._shapes = shapes
        self._namespaces = namespaces
        self._hooks = hooks
        self._guard = guard
        self._ttl = ttl_seconds

    async def create(self, namespace: str, body: bytes, dry_run: bool, field_manager: str) -> bytes:
        """The stored object, at the version served; with dry_run, what would
        have been stored (no resourceVersion)."""
        obj, generate = await offload.run(
            len(body), self._new_object, namespace, body, field_manager
        )
        if self._guard is not None:  # as kube's, before a name is generated
            await self._guard.guard_create(obj)
        for attempt in range(_GENERATE_NAME_ATTEMPTS):
            if generate:
                obj["metadata"]["name"] = names.generate_name(generate)
            try:
                return await self._create_once(namespace, obj, dry_run, len(body))
            except StatusError as e:
                if (
                    not generate
                    or e.reason != "AlreadyExists"
                    or attempt + 1 == _GENERATE_NAME_ATTEMPTS
                ):
                    raise
        raise AssertionError("unreachable")

    def _new_object(self, namespace: str, body: bytes, field_manager: str) -> tuple[Obj, str]:
        """The object a create's body makes, prepared by the strategy but not
        named yet where it asks for a generated name; and that name's prefix
        ("" when the body names the object)."""
        r = self._resource
        obj, typed_ok = self._codec.decode(body)
        metadata = obj["metadata"]
        if r.namespaced:
            if metadata.get("namespace") and metadata["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        generate = metadata.get("generateName", "") if not metadata.get("name") else ""
        for field in _SERVER_OWNED:
            metadata.pop(field, None)
        metadata["creationTimestamp"] = meta.now_rfc3339()
        self._codec.check_types(obj, typed_ok)
        self._strategy.prepare_for_create(obj)
        managed_fields.record_update(None, obj, field_manager, r.api_version, self._shapes)
        return obj, generate

    async def _create_once(self, namespace: str, obj: Obj, dry_run: bool, size: int) -> bytes:
        """obj (made from a body of size bytes) validated and stored under the
        name it has now (a generated name may be taken: AlreadyExists)."""
        r = self._resource
        metadata = obj["metadata"]
        causes = await offload.run(size, self._strategy.validate, obj)
        if causes:
            raise errors.invalid(r.kind, metadata.get("name", ""), causes, r.group)
        if self._warning is not None:
            for text in self._warning.warnings_on_create(obj):
                warnings.warn(text)
        if r.namespaced and self._namespaces is not None:
            await require_namespace(self._storage, self._namespaces, r, namespace, metadata["name"])
        metadata["uid"] = str(uuid.uuid4())
        key = r.key(namespace, metadata["name"])
        finish: Finish = _nothing_to_finish
        if self._hooks is not None:
            finish = await self._hooks.begin_create(obj, dry_run=dry_run)
        stored = None
        try:
            with interpreted(r, metadata["name"]):
                if dry_run:
                    await self._refuse_taken(key)
                    return self._codec.answered(obj)
                written = self._codec.final(key, obj)
                stored = await self._storage.create(
                    key, written.value, ttl_seconds=self._ttl, envelope=written.envelope
                )
            return self._codec.served(stored.value)
        finally:
            await finish(stored is not None)

    async def _refuse_taken(self, key: str) -> None:
        """KeyExists when key holds an object (a dry-run create's check)."""
        try:
            await self._storage.get(key, GetOptions(resource_version=""))
        except KeyNotFound:
            return
        raise KeyExists(key, "key exists")
