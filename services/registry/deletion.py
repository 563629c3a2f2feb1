"""DeleteOptions' garbage-collection choices (propagationPolicy and the older
orphanDependents) and the finalizers they put on an object being deleted, as
kube's generic Store does (deletionFinalizersForGarbageCollection): `orphan`
for Orphan, `foregroundDeletion` for Foreground, neither for Background. The
garbage collector acts on those finalizers.
"""

from __future__ import annotations

from dataclasses import dataclass

from strata.api import errors
from strata.api.causes import invalid_value, not_supported

FOREGROUND = "Foreground"
BACKGROUND = "Background"
ORPHAN = "Orphan"
POLICIES = (FOREGROUND, BACKGROUND, ORPHAN)
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"


@dataclass(frozen=True)
class DeleteOptions:
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None

    def check(self) -> None:
        """ValidateDeleteOptions: 422 DeleteOptions."""
        causes = []
        policy = self.propagation_policy
        if self.orphan_dependents is not None and policy is not None:
            detail = "orphanDependents and deletionPropagation cannot be both set"
            causes.append(invalid_value("propagationPolicy", policy, detail))
        if policy is not None and policy not in POLICIES:
            causes.append(not_supported("propagationPolicy", policy, (*POLICIES, "nil")))
        if causes:
            raise errors.invalid("DeleteOptions", "", causes, "meta.k8s.io")

    def _orphans(self, finalizers: list[str]) -> bool:
        if self.orphan_dependents is not None:
            return self.orphan_dependents
        if self.propagation_policy is not None:
            return self.propagation_policy == ORPHAN
        for finalizer in finalizers:  # a finalizer already there stands
            if finalizer in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER):
                return finalizer == ORPHAN_FINALIZER
        return False  # every resource strata serves defaults to Background

    def _in_foreground(self, finalizers: list[str]) -> bool:
        if self.orphan_dependents is not None:
            return False
        if self.propagation_policy is not None:
            return self.propagation_policy == FOREGROUND
        return FOREGROUND_FINALIZER in finalizers

    def finalizers(self, finalizers: list[str]) -> list[str]:
        """An object's finalizers once this deletion's choices are applied."""
        return _applied(finalizers, self._orphans(finalizers), self._in_foreground(finalizers))

    def namespace_finalizers(self, finalizers: list[str]) -> list[str]:
        """A namespace's finalizers once this deletion's choices are applied, as
        kube's namespace registry does on the first delete: unlike the generic
        Store's, orphanDependents=false asks for foregroundDeletion."""
        if self.orphan_dependents is not None:
            orphan, foreground = self.orphan_dependents, not self.orphan_dependents
        elif self.propagation_policy is not None:
            orphan = self.propagation_policy == ORPHAN
            foreground = self.propagation_policy == FOREGROUND
        else:
            orphan = ORPHAN_FINALIZER in finalizers
            foreground = FOREGROUND_FINALIZER in finalizers
        return _applied(finalizers, orphan, foreground)


def _applied(finalizers: list[str], orphan: bool, foreground: bool) -> list[str]:
    """finalizers with exactly the garbage-collection ones asked for (finalizers
    itself when that changes nothing)."""
    kept = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    if orphan:
        kept.append(ORPHAN_FINALIZER)
    if foreground:
        kept.append(FOREGROUND_FINALIZER)
    return kept if set(kept) != set(finalizers) else finalizers
