"""python -m services.registry: Kubernetes API semantics over the storage contract."""

from __future__ import annotations

import argparse
import asyncio

import grpc

from services.registry.bootstrap import ensure_system_namespaces
from services.registry.namespaces import NamespaceLifecycle
from services.registry.readiness import storage_readiness
from services.registry.resources import BUILT_IN, NAMESPACES
from services.registry.server import RegistryServicer
from services.registry.store import Store
from strata import service, telemetry
from strata.api.wire import REGISTRY_SERVICE_NAME
from strata.proto.registry.v1 import registry_pb2_grpc
from strata.storage import GrpcStorage


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m services.registry", description=__doc__)
    service.flag(parser, "listen", "STRATA_REGISTRY_LISTEN", "127.0.0.1:2383", "gRPC address")
    service.flag(
        parser,
        "storage",
        "STRATA_REGISTRY_STORAGE",
        "127.0.0.1:2382",
        "Storage contract address: the cacher, or the storage service to bypass the cache",
    )
    args = parser.parse_args()
    telemetry.setup("strata-registry")
    service.run(_run(args))


async def _run(args: argparse.Namespace) -> None:
    channel = service.connect(args.storage)
    storage = GrpcStorage(channel)

    controllers: list[asyncio.Task[None]] = []

    async def register(server: grpc.aio.Server) -> None:
        await ensure_system_namespaces(Store(NAMESPACES, storage))
        registry_pb2_grpc.add_RegistryServicer_to_server(
            RegistryServicer(BUILT_IN, storage), server
        )
        lifecycle = NamespaceLifecycle(
            Store(NAMESPACES, storage), [Store(r, storage) for r in BUILT_IN]
        )
        controllers.append(asyncio.create_task(lifecycle.run(), name="namespace lifecycle"))

    async def stop() -> None:
        for task in controllers:
            task.cancel()
        await asyncio.gather(*controllers, return_exceptions=True)
        await storage.close()
        await channel.close()

    await service.serve(
        service_name="strata-registry",
        listen=args.listen,
        register=register,
        on_stop=stop,
        readiness={REGISTRY_SERVICE_NAME: storage_readiness(channel, storage, BUILT_IN)},
    )


if __name__ == "__main__":
    main()
