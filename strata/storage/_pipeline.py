"""The client side of strata.storage.v1.Storage/Pipeline (see strata.pipeline):
a broken stream fails the calls waiting on it with Unavailable."""

from __future__ import annotations

import grpc

from strata import telemetry
from strata.pipeline import PipelineClient
from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc
from strata.storage._errors import Unavailable
from strata.storage._wire import restore


def _failed(error: grpc.aio.AioRpcError | None) -> Exception:
    if error is None:
        return Unavailable("", "the storage pipeline closed")
    restored = restore(error)
    return restored if isinstance(restored, Unavailable) else Unavailable("", str(error))


def pipeline_client(
    channel: grpc.aio.Channel,
) -> PipelineClient[storage_pb2.Call, storage_pb2.Result]:
    return PipelineClient(
        storage_pb2_grpc.StorageStub(channel).Pipeline,
        wrap=lambda batch: storage_pb2.Calls(calls=batch),
        unwrap=lambda response: response.results,
        size_of=storage_pb2.Call.ByteSize,
        failed=_failed,
        tracer=telemetry.tracer("strata.storage.client"),
    )
