"""Nobody gets past the gateway: each of storage, cacher and registry, dialled
directly on its gRPC port, refuses a client with no certificate, one another
CA signed (strata's user CA among them) and a strata service it does not
serve, before any handler runs (what a refused write would have written is not
there); the callers it serves are answered."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import grpc
import orjson
import pytest

from services.gateway.pki import issue_client_certificate
from strata import tls
from strata.dev import System
from strata.proto.registry.v1 import registry_pb2, registry_pb2_grpc
from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc

REFUSED_AT_HANDSHAKE = grpc.StatusCode.UNAVAILABLE
TIMEOUT = 10

# Who each service serves (strata.tls.CALLERS), and the others.
SERVED = {
    "storage": ("cacher", "registry"),
    "cacher": ("registry",),
    "registry": ("gateway", "registry"),
}
NOT_SERVED = {
    "storage": ("gateway",),
    "cacher": ("storage", "gateway", "cacher"),
    "registry": ("storage", "cacher"),
}
SERVICES = tuple(SERVED)


def _config_map(name: str) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"k": "v"},
        }
    )


def _key(name: str) -> str:
    return f"/configmaps/default/{name}"


CONFIGMAPS = registry_pb2.ResourceRef(version="v1", resource="configmaps", namespace="default")


async def _write(service: str, channel: grpc.aio.Channel, name: str) -> None:
    """A create of a ConfigMap called name, as the service's callers send it."""
    if service == "registry":
        stub = registry_pb2_grpc.RegistryStub(channel)
        request = registry_pb2.CreateRequest(resource=CONFIGMAPS, body=_config_map(name))
        await stub.Create(request, timeout=TIMEOUT)
    else:
        storage = storage_pb2_grpc.StorageStub(channel)
        create = storage_pb2.CreateRequest(key=_key(name), value=_config_map(name))
        await storage.Create(create, timeout=TIMEOUT)


async def _read(service: str, channel: grpc.aio.Channel, name: str) -> None:
    """A get of the ConfigMap called name; raises if it is not there."""
    if service == "registry":
        stub = registry_pb2_grpc.RegistryStub(channel)
        await stub.Get(registry_pb2.GetRequest(resource=CONFIGMAPS, name=name), timeout=TIMEOUT)
    else:
        storage = storage_pb2_grpc.StorageStub(channel)
        await storage.Get(storage_pb2.GetRequest(key=_key(name)), timeout=TIMEOUT)


async def _stream(service: str, channel: grpc.aio.Channel) -> None:
    """The first answer of a streaming call (a watch)."""
    if service == "registry":
        stub = registry_pb2_grpc.RegistryStub(channel)
        # Nothing asked on the stream: a refused call ends before anything is.
        await stub.WatchStream(timeout=TIMEOUT).read()
        return
    storage = storage_pb2_grpc.StorageStub(channel)
    request = storage_pb2.WatchRequest(key="/configmaps/", recursive=True)
    await storage.Watch(request, timeout=TIMEOUT).read()


def _channel(
    system: System, service: str, *, cert: bytes | None = None, key: bytes | None = None
) -> grpc.aio.Channel:
    """A channel that trusts the real service (so a refusal is the server's)
    and shows cert, if any."""
    assert system.endpoints is not None
    credentials = grpc.ssl_channel_credentials(
        root_certificates=system.grpc_identity(service).ca, private_key=key, certificate_chain=cert
    )
    return grpc.aio.secure_channel(
        getattr(system.endpoints, service),
        credentials,
        options=tls.channel_options(tls.SERVES[service][0]),
    )


async def _refused(
    call: Callable[[], Awaitable[None]], code: grpc.StatusCode
) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call()
    assert refused.value.code() == code, refused.value
    return refused.value


async def _refused_everything(system: System, service: str, channel: grpc.aio.Channel) -> None:
    """A write, a read and a stream on channel all end at the handshake, and
    the write left nothing behind."""
    name = f"mtls-{uuid.uuid4().hex[:8]}"
    async with channel:
        await _refused(lambda: _write(service, channel, name), REFUSED_AT_HANDSHAKE)
        await _refused(lambda: _read(service, channel, name), REFUSED_AT_HANDSHAKE)
        await _refused(lambda: _stream(service, channel), REFUSED_AT_HANDSHAKE)
    await _not_written(system, service, name)


async def _not_written(system: System, service: str, name: str) -> None:
    async with system.grpc_channel(service, SERVED[service][0]) as allowed:
        await _refused(lambda: _read(service, allowed, name), grpc.StatusCode.NOT_FOUND)


@pytest.mark.parametrize("service", SERVICES)
async def test_no_certificate_is_refused(system: System, service: str) -> None:
    await _refused_everything(system, service, _channel(system, service))
    assert system.endpoints is not None
    plain = grpc.aio.insecure_channel(getattr(system.endpoints, service))
    await _refused_everything(system, service, plain)


@pytest.mark.parametrize("service", SERVICES)
async def test_a_certificate_from_another_ca_is_refused(system: System, service: str) -> None:
    """A CA of the same name signing a certificate of a caller the service
    serves, and strata's user CA (the gateway's) signing one."""
    other_ca = tls.new_ca("strata-internal-ca")
    caller = tls.common_name(SERVED[service][0])
    cert, key = tls.issue(other_ca, caller, hosts=tls.SERVES["registry"], server=True, client=True)
    await _refused_everything(system, service, _channel(system, service, cert=cert, key=key))
    user_cert, user_key = issue_client_certificate(system.home / "pki", caller)
    await _refused_everything(
        system, service, _channel(system, service, cert=user_cert, key=user_key)
    )


@pytest.mark.parametrize(
    ("service", "caller"), [(s, c) for s, callers in NOT_SERVED.items() for c in callers]
)
async def test_a_strata_service_not_served_is_refused(
    system: System, service: str, caller: str
) -> None:
    name = f"mtls-{uuid.uuid4().hex[:8]}"
    async with system.grpc_channel(service, caller) as channel:
        for call in (
            lambda: _write(service, channel, name),
            lambda: _read(service, channel, name),
            lambda: _stream(service, channel),
        ):
            refused = await _refused(call, grpc.StatusCode.PERMISSION_DENIED)
            assert refused.details() == f"strata-{caller} may not call strata-{service}"
    await _not_written(system, service, name)


@pytest.mark.parametrize(
    ("service", "caller"), [(s, c) for s, callers in SERVED.items() for c in callers]
)
async def test_the_callers_served_are_answered(system: System, service: str, caller: str) -> None:
    name = f"mtls-{uuid.uuid4().hex[:8]}"
    async with system.grpc_channel(service, caller) as channel:
        await _write(service, channel, name)
        await _read(service, channel, name)


def test_the_callers_are_strata_tls_own() -> None:
    assert {s: tuple(tls.common_name(c) for c in cs) for s, cs in SERVED.items()} == tls.CALLERS
