"""The Registry Pipeline stream as the gateway uses it, against the running
registry: many calls in flight on one stream, each failure raised as the Status
its unary RPC would have ended with, an empty call refused, and a closed
pipeline a 503 for what still waits on it."""

from __future__ import annotations

import asyncio
import uuid

import grpc
import orjson
import pytest

from strata.api.errors import StatusError
from strata.dev import System
from strata.proto.registry.v1 import registry_pb2
from strata.registry_client import RegistryClient, pipeline_error

CONFIGMAPS = registry_pb2.ResourceRef(version="v1", resource="configmaps")
NAMESPACES = registry_pb2.ResourceRef(version="v1", resource="namespaces")


def _config_map(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})


async def test_calls_share_the_stream_and_fail_as_their_unary_rpcs_would(system: System) -> None:
    assert system.endpoints is not None
    channel = system.grpc_channel("registry", "gateway")
    registry = RegistryClient(channel)
    namespace = f"pipeline-{uuid.uuid4().hex[:8]}"
    ref = registry_pb2.ResourceRef(version="v1", resource="configmaps", namespace=namespace)
    try:
        body = orjson.dumps(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        await registry.Create(registry_pb2.CreateRequest(resource=NAMESPACES, body=body))
        names = [f"c{i}" for i in range(50)]
        created = await asyncio.gather(
            *(
                registry.Create(registry_pb2.CreateRequest(resource=ref, body=_config_map(n)))
                for n in names
            )
        )
        versions = {orjson.loads(c.object)["metadata"]["resourceVersion"] for c in created}
        assert len(versions) == 50
        got = await asyncio.gather(
            *(registry.Get(registry_pb2.GetRequest(resource=ref, name=n)) for n in names)
        )
        assert [orjson.loads(g.object)["metadata"]["name"] for g in got] == names
        listed = await registry.List(registry_pb2.ListRequest(resource=ref))
        assert len(listed.items) == 50

        with pytest.raises(StatusError) as missing:
            await registry.Get(registry_pb2.GetRequest(resource=ref, name="missing"))
        status = missing.value
        assert (status.code, status.reason, status.message) == (
            404,
            "NotFound",
            'configmaps "missing" not found',
        )
        with pytest.raises(StatusError) as invalid:
            request = registry_pb2.CreateRequest(resource=ref, body=_config_map("Not_Valid"))
            await registry.Create(request)
        assert invalid.value.reason == "Invalid"

        # On the wire, the failure has the gRPC code of its unary RPC.
        get = registry_pb2.GetRequest(resource=ref, name="missing")
        calls = registry_pb2.Calls(calls=[registry_pb2.Call(id=6, get=get)])
        async for results in registry.stub.Pipeline(iter([calls])):
            [result] = results.results
            assert result.failure.code == grpc.StatusCode.NOT_FOUND.value[0]
            break

        # A call that asks nothing is refused, and the stream goes on.
        calls = registry_pb2.Calls(calls=[registry_pb2.Call(id=7)])
        async for results in registry.stub.Pipeline(iter([calls])):
            [result] = results.results
            assert (result.id, result.failure.code, result.failure.details) == (
                7,
                grpc.StatusCode.INVALID_ARGUMENT.value[0],
                "empty call",
            )
            break
        assert (await registry.Get(registry_pb2.GetRequest(resource=ref, name="c0"))).object
    finally:
        await registry.close()
        await channel.close()


def test_a_closed_pipeline_is_the_registry_unavailable() -> None:
    status = pipeline_error(None)
    assert (status.code, status.reason) == (503, "ServiceUnavailable")
    assert "the registry pipeline closed" in status.message
