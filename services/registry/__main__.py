"""python -m services.registry: Kubernetes API semantics over the storage contract."""

from __future__ import annotations

import argparse
import asyncio

import grpc

from services.registry.allocation import IPRange, PortRange, ServiceAllocations
from services.registry.bootstrap import ensure_system_namespaces
from services.registry.namespaces import NamespaceLifecycle
from services.registry.readiness import storage_readiness
from services.registry.repair import AllocationRepair
from services.registry.resources import BUILT_IN, NAMESPACES, SERVICES
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
    service.flag(
        parser,
        "service-cluster-ip-range",
        "STRATA_SERVICE_CLUSTER_IP_RANGE",
        "10.96.0.0/16",
        "The CIDR Services' ClusterIPs are allocated from",
    )
    service.flag(
        parser,
        "service-node-port-range",
        "STRATA_SERVICE_NODE_PORT_RANGE",
        "30000-32767",
        "The ports NodePort Services' nodePorts are allocated from",
    )
    args = parser.parse_args()
    try:
        args.cluster_ips = IPRange(args.service_cluster_ip_range)
        args.node_ports = PortRange(args.service_node_port_range)
    except ValueError as e:
        parser.error(str(e))
    telemetry.setup("strata-registry")
    service.run(_run(args))


async def _run(args: argparse.Namespace) -> None:
    channel = service.connect(args.storage)
    storage = GrpcStorage(channel)

    controllers: list[asyncio.Task[None]] = []

    allocations = ServiceAllocations(storage, args.cluster_ips, args.node_ports)
    hooks = {SERVICES.name: allocations}
    stores = [Store(r, storage, hooks.get(r.name)) for r in BUILT_IN]
    namespaces = next(s for s in stores if s.resource is NAMESPACES)

    async def register(server: grpc.aio.Server) -> None:
        await ensure_system_namespaces(namespaces)
        registry_pb2_grpc.add_RegistryServicer_to_server(RegistryServicer(stores, storage), server)
        lifecycle = NamespaceLifecycle(namespaces, stores)
        repair = AllocationRepair(storage, allocations)
        controllers.append(asyncio.create_task(lifecycle.run(), name="namespace lifecycle"))
        controllers.append(asyncio.create_task(repair.run(), name="allocation repair"))

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
