"""A client of the Registry gRPC API for services inside strata: get, list,
watch, create, update and delete as the REST ResourceClient offers them, with
the same shapes (objects and List pages as dicts, events as WatchEvents,
refusals as typed ApiErrors), so informers run on it unchanged, one hop closer
to the objects; calls share the channel's Pipeline stream. (Patches are the
gateway's: the Registry API has none.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import orjson

from strata.api.errors import StatusError
from strata.api.wire import status_from_rpc_error
from strata.client._dynamic import Resource, WatchEvent, namespace_of
from strata.client._errors import ApiError, api_error
from strata.proto.registry.v1 import registry_pb2
from strata.registry_client import registry_client

Obj = dict[str, Any]


def _api_error(status: StatusError) -> ApiError:
    """The typed ApiError (NotFound, Conflict...) the REST client raises for status."""
    return api_error(status.code, status.to_json())


class RegistryResourceClient:
    """One resource through the Registry API (see the module docstring).
    owned_or_deleting: lists and watches see only objects with ownerReferences
    or a deletionTimestamp, as the garbage collector needs them, so the events
    of every other object never reach it (one moving into or out of that set is
    ADDED or DELETED, as with a selector)."""

    def __init__(
        self, channel: grpc.aio.Channel, resource: Resource, *, owned_or_deleting: bool = False
    ) -> None:
        self.registry = registry_client(channel)
        self.stub = self.registry.stub
        self.resource = resource
        self.owned_or_deleting = owned_or_deleting

    def _ref(self, namespace: str | None) -> registry_pb2.ResourceRef:
        r = self.resource
        scoped = namespace if r.namespaced and namespace else ""
        return registry_pb2.ResourceRef(
            group=r.group, version=r.version, resource=r.resource, namespace=scoped
        )

    async def get(self, name: str, namespace: str | None = None) -> Obj:
        request = registry_pb2.GetRequest(resource=self._ref(namespace), name=name)
        return await self._object(self.registry.Get(request))

    async def _object(self, call: Any) -> Obj:
        try:
            answer = await call
        except StatusError as e:
            raise _api_error(e) from None
        found: Obj = orjson.loads(answer.object)
        return found

    async def create(
        self, body: Obj, namespace: str | None = None, *, field_manager: str = ""
    ) -> Obj:
        ns = namespace if namespace is not None else namespace_of(body)
        request = registry_pb2.CreateRequest(
            resource=self._ref(ns), body=orjson.dumps(body), field_manager=field_manager
        )
        return await self._object(self.registry.Create(request))

    async def update(
        self,
        body: Obj,
        namespace: str | None = None,
        *,
        subresource: str = "",
        field_manager: str = "",
    ) -> Obj:
        """Write body back (its metadata.resourceVersion makes it a compare-and-swap)."""
        ns = namespace if namespace is not None else namespace_of(body)
        request = registry_pb2.UpdateRequest(
            resource=self._ref(ns),
            name=str((body.get("metadata") or {}).get("name", "")),
            body=orjson.dumps(body),
            subresource=subresource,
            field_manager=field_manager,
        )
        return await self._object(self.registry.Update(request))

    async def delete(
        self,
        name: str,
        namespace: str | None = None,
        *,
        uid: str = "",
        resource_version: str = "",
        propagation_policy: str | None = None,
    ) -> Obj:
        """The object as the delete left it (being finalized, or gone)."""
        request = registry_pb2.DeleteRequest(
            resource=self._ref(namespace),
            name=name,
            precondition_uid=uid,
            precondition_resource_version=resource_version,
        )
        if propagation_policy is not None:
            request.propagation_policy = propagation_policy
        return await self._object(self.registry.Delete(request))

    async def list(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        label_selector: str = "",
        field_selector: str = "",
        limit: int | None = None,
        continue_: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> Obj:
        """One page, as the REST API's List: items, resourceVersion, continue."""
        options = registry_pb2.ListOptions(
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            limit=limit or 0,
            resource_version_match=resource_version_match,
            owned_or_deleting=self.owned_or_deleting,
        )
        setattr(options, "continue", continue_)
        ref = self._ref(None if all_namespaces else namespace)
        try:
            page = await self.registry.List(registry_pb2.ListRequest(resource=ref, options=options))
        except StatusError as e:
            raise _api_error(e) from None
        metadata: Obj = {"resourceVersion": str(page.resource_version)}
        if token := getattr(page, "continue"):
            metadata["continue"] = token
        return {"metadata": metadata, "items": [orjson.loads(item) for item in page.items]}

    async def watch(
        self,
        namespace: str | None = None,
        *,
        all_namespaces: bool = False,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
        timeout_seconds: int | None = None,
        allow_watch_bookmarks: bool = False,
        send_initial_events: bool | None = None,
        resource_version_match: str = "",
    ) -> AsyncIterator[WatchEvent]:
        """The events of one watch until it ends; an ERROR event or a refusal is
        raised as its ApiError."""
        options = registry_pb2.ListOptions(
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            allow_watch_bookmarks=allow_watch_bookmarks,
            timeout_seconds=timeout_seconds or 0,
            owned_or_deleting=self.owned_or_deleting,
        )
        if send_initial_events is not None:
            options.send_initial_events = send_initial_events
        ref = self._ref(None if all_namespaces else namespace)
        opened = registry_pb2.OpenWatch(
            id=1, watch=registry_pb2.WatchRequest(resource=ref, options=options)
        )
        done = asyncio.Event()

        async def requests() -> AsyncIterator[registry_pb2.WatchStreamRequest]:
            yield registry_pb2.WatchStreamRequest(open=opened)
            await done.wait()  # the stream stays open as long as the watch

        call = self.stub.WatchStream(requests())
        try:
            async for frames in call:
                for frame in frames.frames:
                    kind = frame.WhichOneof("frame")
                    if kind == "refused":
                        body = frame.refused
                        raise api_error(int(orjson.loads(body).get("code") or 500), body)
                    if kind == "ended":
                        return
                    if kind != "event":
                        continue
                    obj: Obj = orjson.loads(frame.event.object) if frame.event.object else {}
                    if frame.event.type == "ERROR":
                        raise api_error(int(obj.get("code") or 500), frame.event.object)
                    yield WatchEvent(frame.event.type, obj)
        except grpc.aio.AioRpcError as e:
            raise _api_error(status_from_rpc_error(e)) from None
        finally:
            done.set()
            call.cancel()
