"""The gateway's identity Lease (kube's apiserver identity and endpoint leases):
each gateway keeps kube-system/strata-gateway-<hash> renewed, saying where it
serves, so that the registry points the `kubernetes` Service's Endpoints at
the gateways alive. A gateway that stops takes its Lease with it."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import socket

import grpc
import orjson

from strata import telemetry
from strata.api import meta
from strata.api.errors import StatusError
from strata.api.wire import status_from_rpc_error
from strata.proto.registry.v1 import registry_pb2, registry_pb2_grpc

NAMESPACE = "kube-system"
# kube's label on apiserver identity Leases, with strata's gateways' value.
IDENTITY_LABEL = "apiserver.kubernetes.io/identity"
IDENTITY = "strata-gateway"
ADDRESS_ANNOTATION = "strata.dev/advertise-address"
LEASE_SECONDS = 15
RENEW_SECONDS = 5.0

log = telemetry.get_logger("strata.gateway.identity")
LEASES = registry_pb2.ResourceRef(
    group="coordination.k8s.io", version="v1", resource="leases", namespace=NAMESPACE
)


def advertise_address(listen: str, given: str = "") -> str:
    """The address other parts are told the gateway serves on: given, else the
    one it listens on (this host's own for a wildcard listen)."""
    host, _, port = listen.rpartition(":")
    host = given or host.strip("[]")
    if ipaddress.ip_address(host).is_unspecified:
        host = socket.gethostbyname(socket.gethostname())
    return f"{host}:{port}"


def lease_name(address: str) -> str:
    return f"{IDENTITY}-{hashlib.sha256(address.encode()).hexdigest()[:16]}"


class IdentityLease:
    def __init__(self, registry: registry_pb2_grpc.RegistryAsyncStub, address: str) -> None:
        self._registry = registry
        self._address = address
        self._name = lease_name(address)

    def _lease(self) -> bytes:
        metadata = {
            "name": self._name,
            "namespace": NAMESPACE,
            "labels": {IDENTITY_LABEL: IDENTITY},
            "annotations": {ADDRESS_ANNOTATION: self._address},
        }
        return orjson.dumps(
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": metadata,
                "spec": {
                    "holderIdentity": self._name,
                    "leaseDurationSeconds": LEASE_SECONDS,
                    "renewTime": meta.now_micro(),
                },
            }
        )

    async def renew_once(self) -> None:
        """Renew the Lease (an update without a resourceVersion: only this gateway
        writes it), or create it when it is not there."""
        try:
            await self._registry.Update(
                registry_pb2.UpdateRequest(resource=LEASES, name=self._name, body=self._lease())
            )
        except grpc.aio.AioRpcError as e:
            if status_from_rpc_error(e).reason != "NotFound":
                raise
            await self._registry.Create(
                registry_pb2.CreateRequest(resource=LEASES, body=self._lease())
            )

    async def run(self) -> None:
        """Renew for ever (a failed renewal is tried again at the next turn);
        on cancellation, remove the Lease."""
        try:
            while True:
                try:
                    await self.renew_once()
                except (grpc.aio.AioRpcError, StatusError) as e:
                    log.warning("cannot renew the gateway's identity lease", error=str(e))
                await asyncio.sleep(RENEW_SECONDS)
        finally:
            with contextlib.suppress(grpc.aio.AioRpcError):
                await self._registry.Delete(
                    registry_pb2.DeleteRequest(resource=LEASES, name=self._name)
                )
