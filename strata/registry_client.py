"""The Registry API as strata's services call it (the gateway, and the
registry's own controllers through strata.client): creates, gets, lists,
updates and deletes over the Registry Pipeline stream (see strata.pipeline),
each failure raised as the StatusError it carries (as status_from_rpc_error
reads the failure of a unary RPC); discovery and watches through the stub. One
client, so one stream, per channel (registry_client)."""

from __future__ import annotations

import weakref

import grpc

from strata import telemetry
from strata.api.errors import StatusError, service_unavailable
from strata.api.wire import REGISTRY_SERVICE_NAME, status_from_rpc_error, status_of
from strata.pipeline import BULK, ORDINARY, PipelineClient
from strata.proto.registry.v1 import registry_pb2, registry_pb2_grpc


def pipeline_error(error: grpc.aio.AioRpcError | None) -> StatusError:
    """What the calls waiting on a broken (error) or closed (None) stream get."""
    if error is not None:
        return status_from_rpc_error(error)
    return service_unavailable("registry unavailable: the registry pipeline closed", 1)


class RegistryClient:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = registry_pb2_grpc.RegistryStub(channel)
        self._pipeline: PipelineClient[registry_pb2.Call, registry_pb2.Result] = PipelineClient(
            self.stub.Pipeline,
            wrap=lambda batch: registry_pb2.Calls(calls=batch),
            unwrap=lambda response: response.results,
            size_of=registry_pb2.Call.ByteSize,
            failed=pipeline_error,
            tracer=telemetry.tracer("strata.registry_client"),
        )

    async def close(self) -> None:
        await self._pipeline.close()

    async def _call(
        self, method: str, call: registry_pb2.Call, *, lane: int = ORDINARY
    ) -> registry_pb2.Result:
        result = await self._pipeline.call(call, f"{REGISTRY_SERVICE_NAME}/{method}", lane=lane)
        if result.WhichOneof("response") == "failure":
            raise status_of(result.failure)
        return result

    async def Create(self, request: registry_pb2.CreateRequest) -> registry_pb2.ObjectResponse:
        return (await self._call("Create", registry_pb2.Call(create=request))).object

    async def Get(self, request: registry_pb2.GetRequest) -> registry_pb2.ObjectResponse:
        return (await self._call("Get", registry_pb2.Call(get=request))).object

    async def List(self, request: registry_pb2.ListRequest) -> registry_pb2.ListResponse:
        return (await self._call("List", registry_pb2.Call(list=request), lane=BULK)).list

    async def Update(self, request: registry_pb2.UpdateRequest) -> registry_pb2.ObjectResponse:
        return (await self._call("Update", registry_pb2.Call(update=request))).object

    async def Delete(self, request: registry_pb2.DeleteRequest) -> registry_pb2.ObjectResponse:
        return (await self._call("Delete", registry_pb2.Call(delete=request))).object

    async def DeleteCollection(
        self, request: registry_pb2.DeleteCollectionRequest
    ) -> registry_pb2.ListResponse:
        call = registry_pb2.Call(delete_collection=request)
        return (await self._call("DeleteCollection", call, lane=BULK)).list


_clients: weakref.WeakKeyDictionary[grpc.aio.Channel, RegistryClient] = weakref.WeakKeyDictionary()


def registry_client(channel: grpc.aio.Channel) -> RegistryClient:
    """The channel's RegistryClient: its calls share one Pipeline stream."""
    client = _clients.get(channel)
    if client is None:
        client = _clients[channel] = RegistryClient(channel)
    return client
