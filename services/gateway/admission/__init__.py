"""kube's admission, as a seam the write handlers go through: before a create,
an update (a PUT, a patch, an apply) or a delete reaches the registry, the
gateway's mutating plugins may change the object the client sent and its
validating plugins may refuse it (a plugin refuses by raising a StatusError,
which the client gets as it is). strata enables no plugin yet
(services/gateway/admission/plugins/); NamespaceLifecycle is done in the
registry's Store, and defaulting and validation are each resource's strategy.

The handlers import this module, never a plugin: an import-linter contract in
pyproject.toml says so, and the app hands the handlers the plugins it enables."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from services.gateway.user import User


class Operation(enum.Enum):
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"


class Attributes(NamedTuple):
    """kube's admission.Attributes: the write a plugin is shown (the object
    itself is given beside them)."""

    operation: Operation
    user: User
    group: str
    version: str
    resource: str
    subresource: str
    namespace: str
    # The path's: "" for a create (the object names itself) and a deletecollection.
    name: str
    dry_run: bool


class MutatingPlugin(Protocol):
    async def admit(self, attributes: Attributes, obj: bytes) -> bytes:
        """obj (JSON; empty for a delete) as this plugin would have it written."""
        ...


class ValidatingPlugin(Protocol):
    async def validate(self, attributes: Attributes, obj: bytes) -> None:
        """Returns when the write may go on; raises a StatusError when it may not."""
        ...


class Admission:
    """The plugins a write goes through: the mutating ones in order, then the
    validating ones (kube's order)."""

    def __init__(
        self,
        mutating: Sequence[MutatingPlugin] = (),
        validating: Sequence[ValidatingPlugin] = (),
    ) -> None:
        self._mutating = tuple(mutating)
        self._validating = tuple(validating)
        # Whether a write has any plugin to go through (none by default: then
        # a write need not even describe itself).
        self.enabled = bool(self._mutating or self._validating)

    async def review(self, attributes: Attributes, obj: bytes) -> bytes:
        """obj as the plugins let it be written."""
        for mutating in self._mutating:
            obj = await mutating.admit(attributes, obj)
        for validating in self._validating:
            await validating.validate(attributes, obj)
        return obj
