"""The namespaces every cluster has (kube's bootstrap controller): created at
start when missing, so `kubectl` works in `default` from the first command."""

from __future__ import annotations

import asyncio

import orjson

from services.registry.store import Store
from strata import telemetry
from strata.api.errors import StatusError

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

log = telemetry.get_logger("strata.registry.bootstrap")


async def ensure_system_namespaces(namespaces: Store, attempts: int = 50) -> None:
    for name in SYSTEM_NAMESPACES:
        body = orjson.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        for attempt in range(attempts):
            try:
                await namespaces.create("", body)
                log.info("created namespace", namespace=name)
                break
            except StatusError as e:
                if e.reason == "AlreadyExists":
                    break
                if attempt + 1 == attempts:
                    raise
                # Storage may still be starting; try again shortly.
                await asyncio.sleep(0.2)
