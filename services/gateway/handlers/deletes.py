"""DELETE of an object and of a collection: DeleteOptions read from the body
and the query in kube's order, put through admission, and sent to the registry."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from services.gateway import kubeproto, negotiation
from services.gateway.admission import Operation
from services.gateway.handlers import query
from services.gateway.handlers.call import Call
from services.gateway.handlers.reads import list_body
from services.gateway.responses import object_response
from strata.api import errors
from strata.proto.registry.v1 import registry_pb2


async def _body_options(request: web.Request) -> dict[str, Any]:
    """The DeleteOptions the request's body gives (none without a body)."""
    if not request.can_read_body:
        return {}
    raw = await request.read()
    if not raw.strip():
        return {}
    body = await negotiation.body_as_json(
        request.headers.get("Content-Type", ""), raw, kubeproto.DELETE_OPTIONS
    )
    try:
        options = orjson.loads(body.json)
    except orjson.JSONDecodeError as e:
        raise errors.bad_request(f"invalid DeleteOptions: {e}") from None
    if not isinstance(options, dict):
        raise errors.bad_request("DeleteOptions must be a JSON object")
    return options


async def _delete_options(request: web.Request) -> tuple[dict[str, Any], bool]:
    """The request's DeleteOptions (from its body) and whether it is a dry run
    (query parameters first, then what the body sets: kube's order)."""
    options = await _body_options(request)
    dry_run_values = options.get("dryRun", request.query.getall("dryRun", []))
    if not isinstance(dry_run_values, list):
        raise errors.bad_request("DeleteOptions.dryRun must be a list of strings")
    # The query's garbage-collection choices, unless the body makes its own.
    if "propagationPolicy" in request.query:
        options.setdefault("propagationPolicy", request.query["propagationPolicy"])
    if "orphanDependents" in request.query:
        orphan = request.query["orphanDependents"]
        if orphan not in ("true", "false"):
            raise errors.bad_request(
                f'invalid value for orphanDependents: strconv.ParseBool: parsing "{orphan}": '
                "invalid syntax"
            )
        options.setdefault("orphanDependents", orphan == "true")
    # Taken and checked; no resource strata serves deletes gracefully (kube's
    # only graceful resource is pods), so a grace period changes nothing.
    if "gracePeriodSeconds" in request.query:
        grace = request.query["gracePeriodSeconds"]
        try:
            options.setdefault("gracePeriodSeconds", int(grace))
        except ValueError:
            raise errors.bad_request(
                f'invalid value for gracePeriodSeconds: strconv.ParseInt: parsing "{grace}": '
                "invalid syntax"
            ) from None
    grace_period = options.get("gracePeriodSeconds")
    if grace_period is not None and (
        not isinstance(grace_period, int) or isinstance(grace_period, bool)
    ):
        raise errors.bad_request("DeleteOptions.gracePeriodSeconds must be an integer")
    return options, query.dry_run([str(v) for v in dry_run_values], "DeleteOptions")


def _garbage_collection(options: dict[str, Any]) -> dict[str, Any]:
    """DeleteOptions' propagationPolicy and orphanDependents as the registry
    takes them (left out when the client left them out)."""
    fields: dict[str, Any] = {}
    policy, orphan = options.get("propagationPolicy"), options.get("orphanDependents")
    if policy is not None:
        if not isinstance(policy, str):
            raise errors.bad_request("DeleteOptions.propagationPolicy must be a string")
        fields["propagation_policy"] = policy
    if orphan is not None:
        if not isinstance(orphan, bool):
            raise errors.bad_request("DeleteOptions.orphanDependents must be a boolean")
        fields["orphan_dependents"] = orphan
    return fields


async def delete_collection(call: Call) -> web.Response:
    request = call.request
    if call.api.namespaced and not call.info.namespace:
        raise errors.method_not_allowed()
    options, dry_run = await _delete_options(request)
    listed = query.list_options(request)
    garbage_collection = _garbage_collection(options)
    await call.admitted(Operation.DELETE, b"", dry_run)
    response = await call.registry.DeleteCollection(
        registry_pb2.DeleteCollectionRequest(
            resource=call.ref, options=listed, dry_run=dry_run, **garbage_collection
        )
    )
    return list_body(call.ref, call.api, response)


async def delete(call: Call) -> web.Response:
    options, dry_run = await _delete_options(call.request)
    preconditions = options.get("preconditions") or {}
    uid = str(preconditions.get("uid") or "")
    resource_version = str(preconditions.get("resourceVersion") or "")
    garbage_collection = _garbage_collection(options)
    await call.admitted(Operation.DELETE, b"", dry_run)
    response = await call.registry.Delete(
        registry_pb2.DeleteRequest(
            resource=call.ref,
            name=call.info.name,
            precondition_uid=uid,
            precondition_resource_version=resource_version,
            dry_run=dry_run,
            **garbage_collection,
        )
    )
    # kube's: 202 for a delete that only marked the object, when the client
    # asked for orphanDependents=false (its handler's !wasDeleted).
    accepted = response.pending and options.get("orphanDependents") is False
    return object_response(response, 202 if accepted else 200)
