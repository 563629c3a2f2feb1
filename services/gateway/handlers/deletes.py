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
from services.gateway.handlers.go_types import Struct, type_error
from services.gateway.handlers.reads import list_body
from services.gateway.responses import object_response
from strata.api import errors, gojson
from strata.proto.registry.v1 import registry_pb2

_PRECONDITIONS = Struct(
    "v1.Preconditions", "Preconditions", {"uid": "types.UID", "resourceVersion": "string"}
)
_DELETE_OPTIONS = Struct(
    "v1.DeleteOptions",
    "DeleteOptions",
    {
        "gracePeriodSeconds": "int64",
        "preconditions": _PRECONDITIONS,
        "orphanDependents": "bool",
        "propagationPolicy": "v1.DeletionPropagation",
        "dryRun": "[]string",
        "ignoreStoreReadErrorWithClusterBreakingPotential": "bool",
    },
)
# Bodies up to this size get Go's exact syntax error (a Python pass over them).
_SCAN_LIMIT = 16 * 1024


async def _body_options(request: web.Request) -> dict[str, Any]:
    """The DeleteOptions the request's body gives (none without a body), or
    kube's 400 for a body its decoder refuses (in Go's words, as they are)."""
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
        syntax = gojson.syntax_error(body.json) if len(body.json) <= _SCAN_LIMIT else None
        raise errors.bad_request(
            f"couldn't get version/kind; json parse error: {syntax or e}"
        ) from None
    if options is None:  # Go decodes null into an empty struct
        return {}
    if not isinstance(options, dict):
        raise errors.bad_request("DeleteOptions must be a JSON object")
    if (problem := type_error(options, _DELETE_OPTIONS, "", "", body.json)) is not None:
        raise errors.bad_request(problem)
    return {name: value for name, value in options.items() if value is not None}


async def _delete_options(request: web.Request) -> tuple[dict[str, Any], bool]:
    """The request's DeleteOptions (from its body) and whether it is a dry run
    (query parameters first, then what the body sets: kube's order)."""
    options = await _body_options(request)
    dry_run_values = options.get("dryRun", request.query.getall("dryRun", []))
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
        try:
            grace = query.go_int64(request.query["gracePeriodSeconds"])
        except ValueError as e:
            raise errors.bad_request(str(e)) from None
        options.setdefault("gracePeriodSeconds", grace)
    # A null in dryRun is Go's zero string.
    return options, query.dry_run([v or "" for v in dry_run_values], "DeleteOptions")


def _garbage_collection(options: dict[str, Any]) -> dict[str, Any]:
    """DeleteOptions' propagationPolicy and orphanDependents as the registry
    takes them (left out when the client left them out)."""
    fields: dict[str, Any] = {}
    policy, orphan = options.get("propagationPolicy"), options.get("orphanDependents")
    if policy is not None:
        fields["propagation_policy"] = policy
    if orphan is not None:
        fields["orphan_dependents"] = orphan
    return fields


async def delete_collection(call: Call) -> web.Response:
    request = call.request
    if call.api.namespaced and not call.info.namespace:
        raise errors.method_not_allowed()
    listed = query.list_options(request)  # kube reads the query's first
    options, dry_run = await _delete_options(request)
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
