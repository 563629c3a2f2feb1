"""A watch as the Store serves it: the storage key and options a watch asks
storage for, and storage's events as the watch stream carries them (objects at
the version served, BOOKMARKs, a Table per event, the ERROR a storage error
ends a watch with)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from services.registry.generic import tables
from services.registry.generic.codec import Codec
from services.registry.generic.declarations import Resource
from services.registry.generic.options import Rendering, Selection, check_watch_options
from services.registry.generic.storage_errors import status_of
from strata.proto.storage.v1 import storage_pb2
from strata.storage import StorageError, WatchOptions

# The annotation on the BOOKMARK that ends a watch-list's initial events.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_EVENT_TYPES = {
    storage_pb2.WatchEvent.ADDED: "ADDED",
    storage_pb2.WatchEvent.MODIFIED: "MODIFIED",
    storage_pb2.WatchEvent.DELETED: "DELETED",
    storage_pb2.WatchEvent.BOOKMARK: "BOOKMARK",
}


@dataclass(frozen=True, kw_only=True)
class WatchItem:
    type: str
    object: bytes


def watch_target(
    resource: Resource,
    selection: Selection,
    resource_version: str,
    rendering: Rendering,
    *,
    bookmarks: bool = False,
    resource_version_match: str = "",
    continue_token: str = "",
    send_initial_events: bool | None = None,
    timeout_seconds: float = 0,
) -> tuple[str, WatchOptions]:
    """The storage key and options of a watch (a single key for a watch on one
    name, as kube's cacher does for metadata.name selectors)."""
    check_watch_options(resource_version_match, continue_token, send_initial_events)
    if rendering.as_table:
        tables.check_include_object(rendering.include_object)
    name = selection.fields.exact("metadata.name")
    if name is not None and (selection.namespace or not resource.namespaced):
        key, recursive = resource.key(selection.namespace, name), False
    else:
        key, recursive = resource.key_prefix(selection.namespace), True
    return key, WatchOptions(
        resource_version=resource_version,
        recursive=recursive,
        predicate=selection.predicate,
        progress_notify=bookmarks,
        send_initial_events=send_initial_events,
        timeout_seconds=timeout_seconds,
    )


def watch_item(codec: Codec, event: storage_pb2.WatchEvent, rendering: Rendering) -> WatchItem:
    """A storage event as the watch stream carries it."""
    if event.type == storage_pb2.WatchEvent.BOOKMARK:
        return WatchItem(type="BOOKMARK", object=_bookmark(codec.resource, event))
    value = codec.served(event.object.value)
    if rendering.as_table:
        value = tables.table(codec.resource, [value], "", rendering.include_object)
    return WatchItem(type=_EVENT_TYPES[event.type], object=value)


def watch_error(resource: Resource, error: StorageError) -> WatchItem:
    """The ERROR event for a storage error that ended a watch, as in kube."""
    return WatchItem(type="ERROR", object=status_of(error, resource).to_json())


def _bookmark(resource: Resource, event: storage_pb2.WatchEvent) -> bytes:
    """A BOOKMARK's object: the resource's kind with only a resourceVersion (as
    kube), annotated k8s.io/initial-events-end when it ends a watch-list's state."""
    metadata: dict[str, Any] = {"resourceVersion": str(event.resource_version)}
    if event.initial_events_end:
        metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
    return orjson.dumps(
        {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": metadata}
    )
