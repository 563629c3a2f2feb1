"""RBAC's escalation prevention (kube's pkg/registry/rbac/*/policybased): nobody
grants through a Role, ClusterRole or binding a permission they do not hold
themselves, unless authorized to: `escalate` on the role, `bind` on the role a
binding names. Members of system:masters, and the registry's own controllers,
are never refused.

A write's permissions and decisions are the gateway's authorizer's, asked
through services/registry/generic/requester.py: the check asks for the
escalate (or bind) decision and for the requester's rules in the request's
namespace at once, and the write is sent again with both. A binding's role is
read here, from storage, as kube's rule resolver reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from services.registry.builtin.rbac import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    GROUP,
    ROLE_BINDINGS,
    ROLES,
)
from services.registry.generic import requester
from services.registry.generic.declarations import Resource
from services.registry.generic.requester import Access, Requester, RulesIn
from strata.api import errors
from strata.api.errors import StatusError
from strata.api.rbac import compact, compact_string, covers, go_strings
from strata.storage import GetOptions, KeyNotFound, Storage

Obj = dict[str, Any]
# kube's fullAuthority: what an aggregationRule needs, since it can gather anything.
FULL_AUTHORITY: tuple[Obj, ...] = (
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
)
_AGGREGATION_REFUSED = "must have cluster-admin privileges to use the aggregationRule"
# The metadata a garbage collector changes (kube's IsOnlyMutatingGCFields).
_GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "managedFields")


def only_gc_fields(obj: Obj, old: Obj) -> bool:
    """Whether obj differs from old in nothing but what the garbage collector
    changes to delete it in the end: such an update is never an escalation."""
    meta, old_meta = dict(obj.get("metadata") or {}), old.get("metadata") or {}
    for field in _GC_FIELDS:
        meta.pop(field, None)
        if field in old_meta:
            meta[field] = old_meta[field]
    return {**obj, "metadata": meta} == old


def _missing(asking: Requester, rules: Sequence[Obj]) -> str:
    """kube's ConfirmNoEscalation: "" when the requester holds every permission
    rules grant in the request's namespace, else why not."""
    owner = asking.rules(asking.namespace)
    held, missing = covers(owner.rules, rules)
    if held:
        return ""
    described = sorted({compact_string(rule) for rule in compact(missing)})
    message = (
        f'user "{asking.name}" (groups={go_strings(asking.groups)}) is attempting to grant '
        "RBAC permissions not currently held:\n" + "\n".join(described)
    )
    if owner.errors:
        message += f"; resolution errors: [{' '.join(owner.errors)}]"
    return message


def _acting() -> Requester | None:
    """The requester to check, or None when nothing is to be checked."""
    asking = requester.current()
    return None if asking is None or asking.privileged else asking


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


class RoleGuard:
    """Roles and ClusterRoles: their rules held, or `escalate` on them; an
    aggregationRule (set, or taken away) needs everything."""

    def __init__(self, resource: Resource) -> None:
        self._resource = resource
        self._aggregates = resource.name == CLUSTER_ROLES.name

    async def guard_create(self, obj: Obj) -> None:
        self._check(obj, None)

    async def guard_update(self, obj: Obj, old: Obj) -> None:
        if not only_gc_fields(obj, old):
            self._check(obj, old)

    def _check(self, obj: Obj, old: Obj | None) -> None:
        asking = _acting()
        if asking is None:
            return
        r = self._resource
        escalate = Access("escalate", GROUP, r.name, asking.namespace, asking.request_name)
        asking.unanswered(escalate, RulesIn(asking.namespace))
        if asking.allowed(escalate):
            return
        if message := _missing(asking, obj.get("rules") or []):
            raise errors.forbidden(r.name, _name(obj), message, GROUP)
        aggregated = _has_aggregation_rule(obj) or _has_aggregation_rule(old)
        if self._aggregates and aggregated and _missing(asking, FULL_AUTHORITY):
            raise errors.forbidden(r.name, _name(obj), _AGGREGATION_REFUSED, GROUP)


def _has_aggregation_rule(role: Obj | None) -> bool:
    return bool(((role or {}).get("aggregationRule") or {}).get("clusterRoleSelectors"))


class BindingGuard:
    """RoleBindings and ClusterRoleBindings: the permissions of the role they
    name held, or `bind` on that role."""

    def __init__(self, resource: Resource, storage: Storage) -> None:
        self._resource = resource
        self._storage = storage

    async def guard_create(self, obj: Obj) -> None:
        await self._check(obj)

    async def guard_update(self, obj: Obj, old: Obj) -> None:
        if not only_gc_fields(obj, old):
            await self._check(obj)

    async def _check(self, obj: Obj) -> None:
        asking = _acting()
        if asking is None:
            return
        ref = obj.get("roleRef") or {}
        bind = _bind_access(ref, asking.namespace)
        asking.unanswered(*([bind] if bind else []), RulesIn(asking.namespace))
        if bind is not None and asking.allowed(bind):
            return
        rules = await self._role_rules(ref, asking.namespace)
        if message := _missing(asking, rules):
            raise errors.forbidden(self._resource.name, _name(obj), message, GROUP)

    async def _role_rules(self, ref: Obj, namespace: str) -> list[Obj]:
        """kube's GetRoleReferenceRules: the rules of the role ref names."""
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        if kind == "Role":
            if not namespace:
                raise errors.bad_request("Namespace parameter required.")
            key = ROLES.key(namespace, name)
        elif kind == "ClusterRole":
            key = CLUSTER_ROLES.key("", name)
        else:
            quoted = orjson.dumps(str(kind or "")).decode()
            # A plain error in kube: a 500 with neither reason nor details.
            message = f"unsupported role reference kind: {quoted}"
            raise StatusError(code=500, reason="", message=message, bare=True)
        try:
            stored = await self._storage.get(key, GetOptions(resource_version=""))
        except KeyNotFound:
            # kube's words: the binding's resource, the role's name.
            raise errors.not_found(self._resource.name, name, GROUP) from None
        rules = orjson.loads(stored.value).get("rules")
        return [rule for rule in rules or [] if isinstance(rule, dict)]


def _bind_access(ref: Obj, binding_namespace: str) -> Access | None:
    """kube's BindingAuthorized attributes: `bind` on the role, in the binding's
    namespace (none for a ClusterRoleBinding); None for a kind that is no role."""
    resource = {"Role": ROLES.name, "ClusterRole": CLUSTER_ROLES.name}.get(str(ref.get("kind")))
    if resource is None:
        return None
    return Access(
        "bind",
        str(ref.get("apiGroup") or ""),
        resource,
        binding_namespace,
        str(ref.get("name") or ""),
    )


def guards(storage: Storage) -> dict[str, RoleGuard | BindingGuard]:
    """The guard of each RBAC resource, by resource name."""
    return {
        ROLES.name: RoleGuard(ROLES),
        CLUSTER_ROLES.name: RoleGuard(CLUSTER_ROLES),
        ROLE_BINDINGS.name: BindingGuard(ROLE_BINDINGS, storage),
        CLUSTER_ROLE_BINDINGS.name: BindingGuard(CLUSTER_ROLE_BINDINGS, storage),
    }
