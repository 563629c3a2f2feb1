"""A pipelined registry call's Failure read back into the StatusError it was:
the same Status that status_from_rpc_error reads from the unary RPC failing
alike, including the fallbacks for a failure that carries no Status."""

from __future__ import annotations

import grpc
import pytest

from strata.api import errors
from strata.api.errors import StatusError
from strata.api.wire import STATUS_METADATA_KEY, failure, status_from_rpc_error, status_of
from strata.proto.registry.v1 import registry_pb2


def _seen(error: StatusError) -> tuple[object, ...]:
    return (error.status(), error.retry_after_seconds, error.bare, type(error))


def _unary(failed: registry_pb2.Failure) -> grpc.aio.AioRpcError:
    """The error the unary RPC raises for the same failure."""
    trailing = ((STATUS_METADATA_KEY, failed.status),) if failed.status else ()
    code = next(c for c in grpc.StatusCode if c.value[0] == failed.code)
    return grpc.aio.AioRpcError(
        code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailing), failed.details
    )


@pytest.mark.parametrize(
    "failed",
    [
        failure(errors.not_found("configmaps", "missing")),
        failure(errors.timeout("slow", retry_after_seconds=3)),
        failure(errors.bad_request("bare")),
        registry_pb2.Failure(code=grpc.StatusCode.UNAVAILABLE.value[0], details="gone"),
        registry_pb2.Failure(code=grpc.StatusCode.INTERNAL.value[0], details="a bug"),
        registry_pb2.Failure(code=grpc.StatusCode.UNKNOWN.value[0]),
    ],
)
def test_a_failure_is_the_status_its_unary_rpc_gives(failed: registry_pb2.Failure) -> None:
    assert _seen(status_of(failed)) == _seen(status_from_rpc_error(_unary(failed)))


def test_a_failure_without_a_status_is_described_by_its_code() -> None:
    unavailable = registry_pb2.Failure(code=grpc.StatusCode.UNAVAILABLE.value[0], details="gone")
    assert (status_of(unavailable).code, status_of(unavailable).message) == (
        503,
        "registry unavailable: gone",
    )
    broken = registry_pb2.Failure(code=grpc.StatusCode.INTERNAL.value[0], details="a bug")
    assert (status_of(broken).code, status_of(broken).message) == (
        500,
        "Internal error occurred: registry call failed: INTERNAL: a bug",
    )
