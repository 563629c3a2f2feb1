"""python -m services.registry: Kubernetes API semantics over the storage contract."""

from __future__ import annotations

import argparse
import asyncio

import grpc

from services.registry import token_signing
from services.registry.builtin import rbac_escalation
from services.registry.builtin.allocation import IPRange, PortRange, ServiceAllocations
from services.registry.builtin.resources import (
    BUILT_IN,
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CUSTOM_RESOURCE_DEFINITIONS,
    ENDPOINTS,
    EVENTS,
    LEASES,
    NAMESPACES,
    SCHEME,
    SECRETS,
    SERVICE_ACCOUNTS,
    SERVICES,
)
from services.registry.builtin.serviceaccounts import TOKEN_SUBRESOURCE, TokenRequests
from services.registry.controllers.aggregation import ClusterRoleAggregation
from services.registry.controllers.bootstrap import bootstrap
from services.registry.controllers.crd_controllers import CRDCleanup, CRDNaming
from services.registry.controllers.gc import GarbageCollector
from services.registry.controllers.kubernetes_service import KubernetesService
from services.registry.controllers.leader import LeaderElection, Timing, default_identity
from services.registry.controllers.namespaces import NamespaceLifecycle
from services.registry.controllers.repair import AllocationRepair
from services.registry.controllers.serviceaccounts import DefaultServiceAccounts
from services.registry.controllers.tokens import TokensController
from services.registry.generic.store import Store
from services.registry.known_namespaces import KnownNamespaces
from services.registry.readiness import storage_readiness
from services.registry.served import ServedStores
from services.registry.server import RegistryServicer, SubresourceCreator, add_to_server
from strata import service, telemetry, tls
from strata.api.wire import REGISTRY_SERVICE_NAME
from strata.storage import GrpcStorage

# The Lease the registry replicas elect their controllers' leader with.
LEASE_NAME = "strata-registry"


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
    service.tls_flags(parser, "registry")
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
    service.flag(
        parser,
        "leader-elect",
        "STRATA_LEADER_ELECT",
        "true",
        "Run the controllers only while holding the kube-system/strata-registry Lease, so that "
        "of several replicas one runs them",
    )
    service.flag(
        parser,
        "leader-elect-lease-duration",
        "STRATA_LEADER_ELECT_LEASE_DURATION",
        "15s",
        "How long a candidate waits, after the leader last renewed, before taking the Lease",
    )
    service.flag(
        parser,
        "leader-elect-renew-deadline",
        "STRATA_LEADER_ELECT_RENEW_DEADLINE",
        "10s",
        "How long the leader keeps trying to renew before it stops leading",
    )
    service.flag(
        parser,
        "leader-elect-retry-period",
        "STRATA_LEADER_ELECT_RETRY_PERIOD",
        "2s",
        "How often candidates try to acquire and the leader renews",
    )
    service.flag(
        parser,
        "event-ttl",
        "STRATA_EVENT_TTL",
        "1h",
        "How long events are kept after their last write",
    )
    token_signing.add_flags(parser)
    args = parser.parse_args()
    try:
        args.signer = token_signing.signer(args)
        args.event_ttl_seconds = round(service.parse_duration(args.event_ttl))
        args.cluster_ips = IPRange(args.service_cluster_ip_range)
        args.node_ports = PortRange(args.service_node_port_range)
        args.timing = Timing(
            lease_duration=service.parse_duration(args.leader_elect_lease_duration),
            renew_deadline=service.parse_duration(args.leader_elect_renew_deadline),
            retry_period=service.parse_duration(args.leader_elect_retry_period),
        )
    except ValueError as e:
        parser.error(str(e))
    if args.leader_elect not in ("true", "false"):
        parser.error(f"--leader-elect must be true or false, not {args.leader_elect!r}")
    args.identity = service.tls_identity(args, "strata-registry")
    telemetry.setup("strata-registry")
    service.run(_run(args))


def _built_in(
    args: argparse.Namespace,
    storage: GrpcStorage,
    allocations: ServiceAllocations,
    known_namespaces: KnownNamespaces,
) -> list[Store]:
    """A Store for each built-in resource, given what its writes need beyond it."""
    hooks = {SERVICES.name: allocations}
    guards = rbac_escalation.guards(storage)
    ttls = {EVENTS.name: args.event_ttl_seconds}
    return [
        Store(
            r,
            storage,
            hooks.get(r.name),
            ttl_seconds=ttls.get(r.name, 0),
            namespaces=known_namespaces,
            scheme=SCHEME,
            guard=guards.get(r.name),
        )
        for r in BUILT_IN
    ]


def _token_signing(
    args: argparse.Namespace,
    itself: grpc.aio.Channel,
    store_of: dict[str, Store],
    storage: GrpcStorage,
    known_namespaces: KnownNamespaces,
) -> tuple[dict[tuple[str, str, str], SubresourceCreator], list[TokensController]]:
    """The token subresource and the tokens controller: both only when there is
    a key to sign with, as kube installs neither without one."""
    if args.signer is None:
        return {}, []
    accounts, secrets = store_of[SERVICE_ACCOUNTS.name], store_of[SECRETS.name]
    requests = TokenRequests(
        args.signer,
        accounts,
        secrets,
        storage=storage,
        namespaces=known_namespaces,
        scheme=SCHEME,
    )
    root_ca = token_signing.root_ca(args)
    controller = TokensController(itself, accounts, secrets, args.signer, root_ca)
    return {TOKEN_SUBRESOURCE: requests}, [controller]


async def _run(args: argparse.Namespace) -> None:
    channel = service.connect(args.storage, args.identity, tls.STORAGE_CONTRACT)
    storage = GrpcStorage(channel)

    controllers: list[asyncio.Task[None]] = []

    allocations = ServiceAllocations(storage, args.cluster_ips, args.node_ports)
    known_namespaces = KnownNamespaces()
    stores = _built_in(args, storage, allocations, known_namespaces)
    store_of = {s.resource.name: s for s in stores}
    namespaces, cluster_roles = store_of[NAMESPACES.name], store_of[CLUSTER_ROLES.name]
    definitions = store_of[CUSTOM_RESOURCE_DEFINITIONS.name]
    served = ServedStores(stores, storage, namespaces=known_namespaces)

    # The controllers that are clients of the API reach it as others do: over
    # the Registry API, here the registry's own; so do the informers the
    # Stores read CRDs and namespaces from, with the registry's own certificate.
    itself = service.connect(args.listen, args.identity, tls.REGISTRY_CONTRACT)
    crds = served.follow_crds(itself)
    namespace_informer = known_namespaces.follow(itself)
    accounts = store_of[SERVICE_ACCOUNTS.name]
    creators, tokens = _token_signing(args, itself, store_of, storage, known_namespaces)

    async def lead() -> None:
        """The controllers, run by one replica at a time."""
        await asyncio.gather(
            NamespaceLifecycle(itself, namespaces, served.distinct).run(),
            AllocationRepair(storage, allocations).run(),
            ClusterRoleAggregation(itself, cluster_roles).run(),
            GarbageCollector(itself, served).run(),
            CRDNaming(itself, definitions).run(),
            CRDCleanup(itself, definitions, storage).run(),
            DefaultServiceAccounts(itself, accounts).run(),
            *(controller.run() for controller in tokens),
            KubernetesService(
                store_of[SERVICES.name],
                store_of[ENDPOINTS.name],
                store_of[LEASES.name],
                cluster_ip=args.cluster_ips.value(0),
            ).run(),
        )

    async def register(server: grpc.aio.Server) -> None:
        await bootstrap(namespaces, cluster_roles, store_of[CLUSTER_ROLE_BINDINGS.name])
        add_to_server(RegistryServicer(served, storage, creators), server)
        crds.start()
        namespace_informer.start()
        if args.leader_elect == "true":
            election = LeaderElection(
                store_of[LEASES.name], LEASE_NAME, default_identity(), args.timing
            )
            controllers.append(asyncio.create_task(election.run(lead), name="leader election"))
        else:
            controllers.append(asyncio.create_task(lead(), name="controllers"))

    async def stop() -> None:
        for task in controllers:
            task.cancel()
        await asyncio.gather(*controllers, return_exceptions=True)
        await crds.stop()
        await namespace_informer.stop()
        await storage.close()
        await channel.close()
        await itself.close()

    await service.serve(
        service_name="strata-registry",
        listen=args.listen,
        identity=args.identity,
        callers=service.allowed_clients(args),
        register=register,
        on_stop=stop,
        readiness={
            REGISTRY_SERVICE_NAME: storage_readiness(channel, storage, BUILT_IN),
            service.ETCD_READINESS: service.relayed_readiness(channel, service.ETCD_READINESS),
        },
    )


if __name__ == "__main__":
    main()
