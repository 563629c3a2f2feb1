"""What every cluster has from its first moment (kube's bootstrap controller and
RBAC bootstrap policy): the system namespaces, so `kubectl` works in `default`
from the first command, and kube's default ClusterRoles and
ClusterRoleBindings (services/registry/builtin/policy.py), by every replica as
it starts.

A namespace is created when missing and otherwise left as it is. The policy is
reconciled as kube's "rbac/bootstrap-roles" start hook reconciles it: a
missing role or binding is created; an existing one keeps what it has and
gains what the default has that it lacks (labels and annotations it does not
set, rules its own do not cover, aggregation selectors, subjects), and a
binding to another role is made again; one annotated
rbac.authorization.kubernetes.io/autoupdate=false is left alone.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import orjson

from services.registry.builtin.policy import AUTOUPDATE, CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES
from services.registry.generic.options import Rendering
from services.registry.generic.store import Store
from services.registry.generic.update import UpdatedObjectInfo
from strata import telemetry
from strata.api.errors import StatusError
from strata.api.rbac import covers

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
ATTEMPTS = 50
# Refusals that trying again would not change.
_FINAL = frozenset({"Invalid", "BadRequest", "Forbidden", "NotFound", "AlreadyExists"})

Obj = dict[str, Any]
T = TypeVar("T")

log = telemetry.get_logger("strata.registry.bootstrap")


async def _retrying(step: Callable[[], Awaitable[T]], attempts: int = ATTEMPTS) -> T:
    """step, again shortly while storage may still be starting (or a write
    races another replica's), up to attempts times."""
    for attempt in range(attempts):
        try:
            return await step()
        except StatusError as e:
            if attempt + 1 == attempts or e.reason in _FINAL:
                raise
            await asyncio.sleep(0.2)
    raise AssertionError("unreachable")


async def ensure(store: Store, namespace: str, body: Obj, attempts: int = ATTEMPTS) -> bool:
    """Create body unless an object of its name exists; whether it was created."""
    name = body["metadata"]["name"]

    async def create() -> bool:
        try:
            await store.create(namespace, orjson.dumps(body))
        except StatusError as e:
            if e.reason == "AlreadyExists":
                return False
            raise
        log.info("created", resource=store.resource.name, namespace=namespace, name=name)
        return True

    return await _retrying(create, attempts)


def _protected(obj: Obj) -> bool:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(AUTOUPDATE) == "false"


def _merged_metadata(out: Obj, expected: Obj) -> None:
    """kube's merge: the default's labels and annotations, the object's own winning."""
    metadata, wanted = out.setdefault("metadata", {}), expected["metadata"]
    for key in ("labels", "annotations"):
        if wanted.get(key):
            metadata[key] = {**wanted[key], **(metadata.get(key) or {})}


def reconciled_role(existing: Obj, expected: Obj) -> Obj:
    """existing as kube's computeReconciledRole leaves it in union mode (nothing
    taken away); existing itself when it is protected."""
    if _protected(existing):
        return existing
    out = copy.deepcopy(existing)
    _merged_metadata(out, expected)
    _, missing = covers(existing.get("rules") or [], expected.get("rules") or [])
    if missing:
        out["rules"] = [*(existing.get("rules") or []), *missing]
    wanted, had = expected.get("aggregationRule"), existing.get("aggregationRule")
    if wanted is None:
        out.pop("aggregationRule", None)
    else:
        selectors = list((had or {}).get("clusterRoleSelectors") or [])
        absent = [s for s in wanted["clusterRoleSelectors"] if s not in selectors]
        if absent:
            out["aggregationRule"] = {"clusterRoleSelectors": selectors + absent}
    return out


def reconciled_binding(existing: Obj, expected: Obj) -> Obj | None:
    """existing as kube's computeReconciledRoleBinding leaves it in union mode;
    None when it binds another role and must be made again."""
    if _protected(existing):
        return existing
    if existing.get("roleRef") != expected["roleRef"]:
        return None
    out = copy.deepcopy(existing)
    _merged_metadata(out, expected)
    subjects = list(existing.get("subjects") or [])
    absent = [s for s in expected["subjects"] if s not in subjects]
    if absent:
        out["subjects"] = subjects + absent
    return out


async def reconcile(store: Store, expected: Obj, attempts: int = ATTEMPTS) -> None:
    """expected (a default role or binding) created, or its object reconciled with it."""
    name = expected["metadata"]["name"]
    binding = "roleRef" in expected
    if await ensure(store, "", expected, attempts):
        return

    def build(current: Obj) -> Obj:
        if binding:
            return reconciled_binding(current, expected) or current
        return reconciled_role(current, expected)

    if binding:
        current = orjson.loads(await _retrying(lambda: store.get("", name, "", Rendering())))
        if reconciled_binding(current, expected) is None:
            log.info("binding recreated for its role", name=name)
            await _retrying(lambda: store.delete("", name, None))
            await ensure(store, "", expected, attempts)
            return
    try:
        await _retrying(lambda: store.guaranteed_update("", name, UpdatedObjectInfo(build=build)))
    except StatusError as e:
        # Deleted meanwhile: made again at the next start (as kube's hook would).
        if e.reason != "NotFound":
            raise


async def bootstrap(namespaces: Store, cluster_roles: Store, bindings: Store) -> None:
    for name in SYSTEM_NAMESPACES:
        await ensure(namespaces, "", {"kind": "Namespace", "metadata": {"name": name}})
    for role in CLUSTER_ROLES:
        await reconcile(cluster_roles, role)
    for binding in CLUSTER_ROLE_BINDINGS:
        await reconcile(bindings, binding)
