"""POST of a new object and PUT of an object or of its status, scale or
finalize: the body read as JSON (from YAML or Kubernetes protobuf too), put
through admission, and sent to the registry."""

from __future__ import annotations

from aiohttp import web

from services.gateway import negotiation
from services.gateway.admission import Operation
from services.gateway.handlers import query
from services.gateway.handlers.call import Call
from services.gateway.responses import object_response
from strata.api import errors
from strata.proto.registry.v1 import registry_pb2


async def create(call: Call) -> web.Response:
    request, api, info = call.request, call.api, call.info
    if api.namespaced and not info.namespace:
        raise errors.path_not_found()
    # As kube's: the options are checked before the body is read.
    dry_run = query.dry_run(request.query.getall("dryRun", []), "CreateOptions")
    field_validation = query.field_validation(request, "CreateOptions")
    manager = query.field_manager(request, "CreateOptions")
    body = await negotiation.body_as_json(
        request.headers.get("Content-Type", ""), await request.read(), query.into(api, info)
    )
    created = await call.create(
        registry_pb2.CreateRequest(
            resource=call.ref,
            # Set for a create of a subresource (a ServiceAccount's token).
            name=info.name,
            subresource=info.subresource,
            body=await call.admitted(Operation.CREATE, body.json, dry_run),
            dry_run=dry_run,
            field_validation=field_validation,
            field_manager=manager,
            decoding=query.decoding(body),
        )
    )
    return object_response(created, 201)


async def update(call: Call) -> web.Response:
    """PUT of an object or of one of its subresources."""
    request = call.request
    dry_run = query.dry_run(request.query.getall("dryRun", []), "UpdateOptions")
    field_validation = query.field_validation(request, "UpdateOptions")
    manager = query.field_manager(request, "UpdateOptions")
    body = await negotiation.body_as_json(
        request.headers.get("Content-Type", ""),
        await request.read(),
        query.into(call.api, call.info),
    )
    updated = await write(
        call,
        await call.admitted(Operation.UPDATE, body.json, dry_run),
        dry_run=dry_run,
        field_validation=field_validation,
        field_manager=manager,
        decoding=query.decoding(body),
    )
    return object_response(updated)


async def write(
    call: Call,
    body: bytes,
    *,
    dry_run: bool,
    field_validation: str,
    field_manager: str = "",
    decoding: registry_pb2.Decoding | None = None,
) -> registry_pb2.ObjectResponse:
    """An update of the object (or subresource) the call names to body."""
    answer: registry_pb2.ObjectResponse = await call.update(
        registry_pb2.UpdateRequest(
            resource=call.ref,
            name=call.info.name,
            body=body,
            dry_run=dry_run,
            subresource=call.info.subresource,
            field_validation=field_validation,
            field_manager=field_manager,
            decoding=decoding,
        )
    )
    return answer
