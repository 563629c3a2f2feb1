"""strata.pipeline.Dispatcher, the Pipeline servicer both the storage and the
registry services use: every call is answered, in its own Result field, its
service's refusal and a bug alike, so no caller waits forever."""

from __future__ import annotations

from collections.abc import AsyncIterator

from strata import telemetry
from strata.pipeline import Dispatcher, Operation
from strata.proto.storage.v1 import storage_pb2
from strata.storage import SERVICE_NAME, KeyNotFound, StorageError
from strata.storage import wire_bytes as wire


async def _get(request: storage_pb2.GetRequest) -> storage_pb2.Object:
    if request.key == "/missing":
        raise KeyNotFound(request.key, "not found")
    if request.key == "/bug":
        raise ZeroDivisionError("division by zero")
    return storage_pb2.Object(key=request.key, value=b"v", resource_version=7)


async def _count(request: storage_pb2.CountRequest) -> storage_pb2.CountResponse:
    return storage_pb2.CountResponse(count=len(request.prefix))


def _failure(error: StorageError) -> bytes:
    failure = storage_pb2.Failure(error=type(error).__name__, message=error.message, key=error.key)
    return failure.SerializeToString()


def _dispatcher() -> Dispatcher[StorageError]:
    return Dispatcher(
        SERVICE_NAME,
        {"get": Operation("Get", _get, "object"), "count": Operation("Count", _count, "count")},
        wire.result,
        refused=StorageError,
        failure=_failure,
        unexpected=lambda request, description: _failure(StorageError(request.key, description)),
        empty=storage_pb2.Failure(error="InvalidRequest", message="empty call").SerializeToString(),
        tracer=telemetry.tracer("test"),
        log=telemetry.get_logger("test"),
    )


async def _one_batch(*calls: storage_pb2.Call) -> list[storage_pb2.Result]:
    async def requests() -> AsyncIterator[storage_pb2.Calls]:
        yield storage_pb2.Calls(calls=calls)

    results: list[storage_pb2.Result] = []
    async for message in _dispatcher().stream(requests()):
        results.extend(storage_pb2.Results.FromString(message).results)
    return sorted(results, key=lambda result: result.id)


async def test_each_call_is_answered_in_its_operations_field() -> None:
    results = await _one_batch(
        storage_pb2.Call(id=1, get=storage_pb2.GetRequest(key="/a")),
        storage_pb2.Call(id=2, count=storage_pb2.CountRequest(prefix="/abc")),
    )
    assert [r.WhichOneof("response") for r in results] == ["object", "count"]
    assert results[0].object == storage_pb2.Object(key="/a", value=b"v", resource_version=7)
    assert results[1].count.count == 4


async def test_a_refusal_a_bug_and_an_empty_call_are_each_answered_as_failures() -> None:
    results = await _one_batch(
        storage_pb2.Call(id=1, get=storage_pb2.GetRequest(key="/missing")),
        storage_pb2.Call(id=2, get=storage_pb2.GetRequest(key="/bug")),
        storage_pb2.Call(id=3),
    )
    assert [r.WhichOneof("response") for r in results] == ["failure"] * 3
    assert results[0].failure == storage_pb2.Failure(
        error="KeyNotFound", message="not found", key="/missing"
    )
    assert results[1].failure == storage_pb2.Failure(
        error="StorageError", message="ZeroDivisionError: division by zero", key="/bug"
    )
    assert results[2].failure == storage_pb2.Failure(error="InvalidRequest", message="empty call")
