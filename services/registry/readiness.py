"""Whether the registry can answer from synced watch caches.

As kube creates a cacher for every resource when the server starts, the
registry starts its storage's cache of every resource it serves (a one-item
RV=0 list does it) and is ready once its storage reports, on the standard
health service, that all of them have synced. Against the storage service
itself (no cacher) that is at once. A storage restart starts it over.

It polls Health.Check: Health.Watch fails behind the OpenTelemetry server
interceptor, which expects streaming handlers to be async generators.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from services.registry.generic.declarations import Resource
from strata import telemetry
from strata.storage import SERVICE_NAME, ListOptions, Storage, StorageError

log = telemetry.get_logger("strata.registry")
_POLL_SECONDS = 0.5


async def storage_readiness(
    channel: grpc.aio.Channel, storage: Storage, resources: tuple[Resource, ...]
) -> AsyncGenerator[bool, None]:
    """The registry's readiness, each time it may have changed."""
    health = health_pb2_grpc.HealthStub(channel)
    request = health_pb2.HealthCheckRequest(service=SERVICE_NAME)
    warm = ListOptions(resource_version="0", limit=1)
    warmed, last = False, None
    while True:
        try:
            if not warmed:
                await asyncio.gather(*(storage.list(r.key_prefix(), warm) for r in resources))
                warmed = True
            answer = await health.Check(request, timeout=_POLL_SECONDS * 4)
            ready = answer.status == health_pb2.HealthCheckResponse.SERVING
        except (grpc.aio.AioRpcError, StorageError) as e:
            if last is not False:
                log.warning("storage is not ready", error=str(e))
            # A storage that comes back may be a restarted cacher with no caches.
            warmed, ready = False, False
        if ready is not last:
            yield ready
            last = ready
        await asyncio.sleep(_POLL_SECONDS)
