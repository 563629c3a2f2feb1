"""GET of one object (or of its status or scale) and of a collection, as the
registry's JSON bytes: a list is framed around its items without decoding them."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from services.gateway.catalog import APIResource
from services.gateway.handlers import query
from services.gateway.handlers.call import Call
from services.gateway.responses import json_response
from strata.proto.registry.v1 import registry_pb2


async def get_object(call: Call) -> web.Response:
    request = call.request
    response = await call.registry.Get(
        registry_pb2.GetRequest(
            resource=call.ref,
            name=call.info.name,
            resource_version=request.query.get("resourceVersion", ""),
            rendering=query.rendering(request),
            subresource=call.info.subresource,
        )
    )
    return json_response(response.object)


async def list_objects(call: Call) -> web.Response:
    options = query.list_options(call.request)
    response = await call.registry.List(
        registry_pb2.ListRequest(resource=call.ref, options=options)
    )
    if options.rendering.as_table:
        return json_response(response.table)
    return list_body(call.ref, call.api, response)


def list_body(
    ref: registry_pb2.ResourceRef, api: APIResource, response: registry_pb2.ListResponse
) -> web.Response:
    """A <Kind>List of the response's items, written around their JSON."""
    list_meta: dict[str, Any] = {"resourceVersion": str(response.resource_version)}
    if continue_token := getattr(response, "continue"):
        list_meta["continue"] = continue_token
    if response.HasField("remaining_item_count"):
        list_meta["remainingItemCount"] = response.remaining_item_count
    head = orjson.dumps(
        {"kind": api.list_kind, "apiVersion": query.api_version(ref), "metadata": list_meta}
    )
    body = head[:-1] + b',"items":[' + b",".join(response.items) + b"]}"
    return json_response(body)
