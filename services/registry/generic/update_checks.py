"""What checks an update's new object against the current one, on every try of
the update loop (services/registry/generic/update.py): for the object itself
and its Scale, Go's types, the strategy (kube's PrepareForUpdate and
ValidateUpdate), managedFields, warnings and write hooks; for the status
subresource, the strategy's status rules; for a namespace's finalize, its
finalizers.
"""

from __future__ import annotations

from typing import Any

from services.registry.generic import offload, warnings
from services.registry.generic.codec import Codec
from services.registry.generic.strategy import (
    Finish,
    WarningStrategy,
    WriteGuard,
    WriteHooks,
    validate_finalizers,
)
from services.registry.generic.update import Admit
from strata.api import errors, managed_fields
from strata.api.errors import Cause

Obj = dict[str, Any]


class UpdateChecks:
    def __init__(
        self,
        codec: Codec,
        shapes: managed_fields.ListShapes,
        hooks: WriteHooks | None = None,
        guard: WriteGuard | None = None,
    ) -> None:
        self._codec = codec
        self._resource = codec.resource
        self._strategy = codec.resource.strategy
        # Found once: a runtime_checkable protocol's isinstance inspects the
        # class on every call.
        strategy = self._strategy
        self._warning = strategy if isinstance(strategy, WarningStrategy) else None
        self._shapes = shapes
        self._hooks = hooks
        self._guard = guard

    def of(self, name: str, subresource: str, field_manager: str, dry_run: bool) -> Admit:
        """The checks of an update of subresource ("" for the object itself)."""
        if subresource == "status":
            return self._status(name)
        if subresource == "finalize":
            return self._finalizers(name)
        return self._object(name, field_manager, dry_run, warn=not subresource)

    def _object(self, name: str, field_manager: str, dry_run: bool, *, warn: bool) -> Admit:
        r = self._resource

        def checked(new: Obj, old: Obj) -> list[Cause]:
            self._strategy.prepare_for_update(new, old)
            causes = self._strategy.validate_update(new, old)
            managed_fields.record_update(old, new, field_manager, r.api_version, self._shapes)
            return causes

        async def admit(new: Obj, old: Obj, size: int) -> Finish | None:
            self._codec.check_types(new)
            if self._guard is not None:
                await self._guard.guard_update(new, old)
            causes = await offload.run(size, checked, new, old)
            if causes:
                raise errors.invalid(r.kind, name, causes, r.group)
            if warn and self._warning is not None:
                for text in self._warning.warnings_on_update(new, old):
                    warnings.warn(text)
            if self._hooks is None:
                return None
            return await self._hooks.begin_update(new, old, dry_run=dry_run)

        return admit

    def _status(self, name: str) -> Admit:
        r = self._resource
        assert r.status is not None
        status = r.status

        async def admit(new: Obj, old: Obj, size: int) -> Finish | None:
            self._codec.check_types(new)
            causes = status.validate_status_update(new, old)
            if causes:
                raise errors.invalid(r.kind, name, causes, r.group)
            return None

        return admit

    def _finalizers(self, name: str) -> Admit:
        r = self._resource

        async def admit(new: Obj, old: Obj, size: int) -> Finish | None:
            causes = [
                cause
                for i, finalizer in enumerate(new["spec"]["finalizers"])
                for cause in validate_finalizers([finalizer], f"spec.finalizers[{i}]")
            ]
            if causes:
                raise errors.invalid(r.kind, name, causes, r.group)
            return None

        return admit
