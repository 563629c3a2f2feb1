"""How an API Status crosses gRPC between registry and gateway: the Status JSON
in trailing metadata, with a gRPC code that matches its HTTP code, or in a
pipelined call's Failure beside the same code; and back into the StatusError
it was, from either."""

from __future__ import annotations

import grpc

from strata.api.errors import StatusError, internal, service_unavailable
from strata.proto.registry.v1 import registry_pb2

# The registry's full service name, also its health service name: SERVING once
# the storage under it can answer (every watch cache has synced).
REGISTRY_SERVICE_NAME: str = registry_pb2.DESCRIPTOR.services_by_name["Registry"].full_name
STATUS_METADATA_KEY = "strata-status-bin"

_GRPC_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    409: grpc.StatusCode.ALREADY_EXISTS,
    410: grpc.StatusCode.OUT_OF_RANGE,
    422: grpc.StatusCode.INVALID_ARGUMENT,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
    504: grpc.StatusCode.DEADLINE_EXCEEDED,
}


def _grpc_code(error: StatusError) -> grpc.StatusCode:
    return _GRPC_CODES.get(error.code, grpc.StatusCode.UNKNOWN)


async def abort_with_status(
    context: grpc.aio.ServicerContext[object, object], error: StatusError
) -> None:
    context.set_trailing_metadata(((STATUS_METADATA_KEY, error.to_json()),))
    await context.abort(_grpc_code(error), error.message)


def carried_status(error: grpc.aio.AioRpcError) -> StatusError | None:
    """The Status a failed registry RPC carries, if it carries one."""
    for key, value in error.trailing_metadata() or ():
        if key == STATUS_METADATA_KEY and isinstance(value, bytes):
            return StatusError.from_json(value)
    return None


def status_from_rpc_error(error: grpc.aio.AioRpcError) -> StatusError:
    """The Status a failed registry RPC carries, or one describing the failure."""
    carried = carried_status(error)
    return carried if carried is not None else _undescribed(error.code(), error.details())


def failure(error: StatusError) -> registry_pb2.Failure:
    """A pipelined call's failure: what abort_with_status would have sent."""
    code = _grpc_code(error).value[0]
    return registry_pb2.Failure(code=code, details=error.message, status=error.to_json())


_BY_NUMBER = {code.value[0]: code for code in grpc.StatusCode}


def status_of(failed: registry_pb2.Failure) -> StatusError:
    """The Status a pipelined call's failure carries, or one describing it, as
    status_from_rpc_error reads the same failure of the unary RPC."""
    if failed.status:
        return StatusError.from_json(failed.status)
    return _undescribed(_BY_NUMBER.get(failed.code, grpc.StatusCode.UNKNOWN), failed.details)


def _undescribed(code: grpc.StatusCode, details: str | None) -> StatusError:
    """A failure that carries no Status (the registry unreachable, or a bug)."""
    if code == grpc.StatusCode.UNAVAILABLE:
        return service_unavailable(f"registry unavailable: {details}", 1)
    return internal(f"registry call failed: {code.name}: {details}")
