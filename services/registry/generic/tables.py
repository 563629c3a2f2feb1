"""meta.k8s.io/v1 Table rendering from a resource's declared columns (kube's
TableConvertor), for `kubectl get` and any client that asks for a Table."""

from __future__ import annotations

from typing import Any

import orjson

from services.registry.generic.declarations import Column, Resource
from services.registry.generic.strategy import lookup
from strata.api.errors import bad_request

INCLUDE_OBJECT = ("None", "Metadata", "Object")


def _cell(column: Column, obj: dict[str, Any]) -> Any:
    if column.cell is not None:
        return column.cell(obj)
    value = lookup(obj, column.path)
    return "" if value is None else value


def _row(resource: Resource, obj: dict[str, Any], include_object: str) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": [_cell(c, obj) for c in resource.columns]}
    if include_object == "Object":
        row["object"] = obj
    elif include_object != "None":
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {}),
        }
    return row


def check_include_object(value: str) -> str:
    value = value or "Metadata"
    if value not in INCLUDE_OBJECT:
        raise bad_request(f'includeObject must be one of None, Metadata, Object, not "{value}"')
    return value


def table(
    resource: Resource,
    objects: list[bytes],
    resource_version: str,
    include_object: str,
    *,
    continue_token: str = "",
    remaining_item_count: int | None = None,
) -> bytes:
    include_object = check_include_object(include_object)
    list_meta: dict[str, Any] = {"resourceVersion": resource_version} if resource_version else {}
    if continue_token:
        list_meta["continue"] = continue_token
    if remaining_item_count is not None:
        list_meta["remainingItemCount"] = remaining_item_count
    body: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            {
                "name": c.name,
                "type": c.type,
                "format": c.format,
                "description": c.description,
                "priority": c.priority,
            }
            for c in resource.columns
        ],
        "rows": [_row(resource, orjson.loads(o), include_object) for o in objects],
    }
    return orjson.dumps(body)
