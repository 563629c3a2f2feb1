"""What every cluster has from its first moment (kube's bootstrap controller and
RBAC bootstrap): the system namespaces, so `kubectl` works in `default` from the
first command, and the default ClusterRoles and bindings. Each is created when
missing and otherwise left as it is, by every replica as it starts.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from services.registry.builtin.policy import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES
from services.registry.generic.store import Store
from strata import telemetry
from strata.api.errors import StatusError

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

log = telemetry.get_logger("strata.registry.bootstrap")


async def ensure(store: Store, namespace: str, body: dict[str, Any], attempts: int = 50) -> None:
    """Create body unless an object of its name exists."""
    name = body["metadata"]["name"]
    for attempt in range(attempts):
        try:
            await store.create(namespace, orjson.dumps(body))
            log.info("created", resource=store.resource.name, namespace=namespace, name=name)
            return
        except StatusError as e:
            if e.reason == "AlreadyExists":
                return
            if attempt + 1 == attempts:
                raise
            # Storage may still be starting; try again shortly.
            await asyncio.sleep(0.2)


async def bootstrap(namespaces: Store, cluster_roles: Store, bindings: Store) -> None:
    for name in SYSTEM_NAMESPACES:
        await ensure(namespaces, "", {"kind": "Namespace", "metadata": {"name": name}})
    for role in CLUSTER_ROLES:
        await ensure(cluster_roles, "", role)
    for binding in CLUSTER_ROLE_BINDINGS:
        await ensure(bindings, "", binding)
