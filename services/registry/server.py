"""RegistryServicer: strata.registry.v1.Registry over the generic Stores."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import grpc

from services.registry.deletion import DeleteOptions
from services.registry.store import Page, Paging, Rendering, Selection, Store
from services.registry.watches import Opened, Route, serve_watches
from strata.api import errors
from strata.api.errors import StatusError
from strata.api.wire import abort_with_status
from strata.proto.registry.v1 import registry_pb2, registry_pb2_grpc
from strata.storage import GrpcStorage, Preconditions

Context = grpc.aio.ServicerContext[object, object]
T = TypeVar("T")


async def _answer(context: Context, call: Callable[[], Awaitable[T]]) -> T:
    """call's result, or the call ended with its Status for the gateway to render."""
    try:
        return await call()
    except StatusError as e:
        await abort_with_status(context, e)
        raise


def _rendering(message: registry_pb2.Rendering) -> Rendering:
    return Rendering(as_table=message.as_table, include_object=message.include_object)


def _list_response(page: Page) -> registry_pb2.ListResponse:
    response = registry_pb2.ListResponse(
        items=page.items, resource_version=page.resource_version, table=page.table
    )
    setattr(response, "continue", page.continue_token)  # a Python keyword
    if page.remaining_item_count is not None:
        response.remaining_item_count = page.remaining_item_count
    return response


def _send_initial_events(options: registry_pb2.ListOptions) -> bool | None:
    """sendInitialEvents as the request gave it, or None when it did not."""
    if options.HasField("send_initial_events"):
        return options.send_initial_events
    return None


class RegistryServicer(registry_pb2_grpc.RegistryServicer):
    def __init__(self, stores: list[Store], storage: GrpcStorage) -> None:
        self._storage = storage
        self._stores = {(s.resource.group, s.resource.version, s.resource.name): s for s in stores}

    def _store(self, ref: registry_pb2.ResourceRef) -> Store:
        store = self._stores.get((ref.group, ref.version, ref.resource))
        if store is None:
            raise errors.path_not_found()
        return store

    async def ListResources(
        self, request: registry_pb2.ListResourcesRequest, context: Context
    ) -> registry_pb2.ListResourcesResponse:
        return registry_pb2.ListResourcesResponse(
            resources=[
                registry_pb2.APIResource(
                    group=s.resource.group,
                    version=s.resource.version,
                    name=s.resource.name,
                    singular_name=s.resource.singular,
                    kind=s.resource.kind,
                    namespaced=s.resource.namespaced,
                    verbs=s.resource.verbs,
                    short_names=s.resource.short_names,
                    categories=s.resource.categories,
                    subresources=s.resource.subresources,
                )
                for s in self._stores.values()
            ]
        )

    async def Create(
        self, request: registry_pb2.CreateRequest, context: Context
    ) -> registry_pb2.ObjectResponse:
        ref = request.resource
        body = await _answer(
            context,
            lambda: self._store(ref).create(ref.namespace, request.body, dry_run=request.dry_run),
        )
        return registry_pb2.ObjectResponse(object=body)

    async def Get(
        self, request: registry_pb2.GetRequest, context: Context
    ) -> registry_pb2.ObjectResponse:
        ref = request.resource
        body = await _answer(
            context,
            lambda: self._store(ref).get(
                ref.namespace,
                request.name,
                request.resource_version,
                _rendering(request.rendering),
                request.subresource,
            ),
        )
        return registry_pb2.ObjectResponse(object=body)

    async def List(
        self, request: registry_pb2.ListRequest, context: Context
    ) -> registry_pb2.ListResponse:
        options = request.options

        async def list_() -> Page:
            store, selection, paging = self._listing(request.resource, options)
            return await store.list(selection, paging, _rendering(options.rendering))

        return _list_response(await _answer(context, list_))

    async def DeleteCollection(
        self, request: registry_pb2.DeleteCollectionRequest, context: Context
    ) -> registry_pb2.ListResponse:
        async def delete() -> Page:
            store, selection, paging = self._listing(request.resource, request.options)
            return await store.delete_collection(
                selection, paging, dry_run=request.dry_run, options=_delete_options(request)
            )

        return _list_response(await _answer(context, delete))

    def _listing(
        self, ref: registry_pb2.ResourceRef, options: registry_pb2.ListOptions
    ) -> tuple[Store, Selection, Paging]:
        store = self._store(ref)
        selection = store.selection(ref.namespace, options.label_selector, options.field_selector)
        paging = Paging(
            resource_version=options.resource_version,
            resource_version_match=options.resource_version_match,
            limit=options.limit,
            continue_token=getattr(options, "continue"),
            send_initial_events=_send_initial_events(options),
        )
        return store, selection, paging

    async def Update(
        self, request: registry_pb2.UpdateRequest, context: Context
    ) -> registry_pb2.ObjectResponse:
        ref = request.resource
        body = await _answer(
            context,
            lambda: self._store(ref).update(
                ref.namespace,
                request.name,
                request.body,
                dry_run=request.dry_run,
                subresource=request.subresource,
            ),
        )
        return registry_pb2.ObjectResponse(object=body)

    async def Delete(
        self, request: registry_pb2.DeleteRequest, context: Context
    ) -> registry_pb2.ObjectResponse:
        preconditions = None
        if request.precondition_uid or request.precondition_resource_version:
            preconditions = Preconditions(
                uid=request.precondition_uid,
                resource_version=request.precondition_resource_version,
            )
        ref = request.resource
        body = await _answer(
            context,
            lambda: self._store(ref).delete(
                ref.namespace,
                request.name,
                preconditions,
                dry_run=request.dry_run,
                options=_delete_options(request),
            ),
        )
        return registry_pb2.ObjectResponse(object=body)

    def _watch_target(self, request: registry_pb2.WatchRequest) -> Opened:
        """Where a watch goes; raises the Status that refuses it."""
        store = self._store(request.resource)
        options = request.options
        selection = store.selection(
            request.resource.namespace, options.label_selector, options.field_selector
        )
        rendering = _rendering(options.rendering)
        key, watch_options = store.watch_target(
            selection,
            options.resource_version,
            rendering,
            bookmarks=options.allow_watch_bookmarks,
            resource_version_match=options.resource_version_match,
            continue_token=getattr(options, "continue"),
            send_initial_events=_send_initial_events(options),
            timeout_seconds=options.timeout_seconds,
        )
        return Route(store, rendering), key, watch_options

    async def WatchStream(
        self, request_iterator: AsyncIterator[registry_pb2.WatchStreamRequest], context: Context
    ) -> AsyncIterator[registry_pb2.WatchFrames]:
        frames = serve_watches(request_iterator, self._storage, self._watch_target)
        try:
            async for message in frames:
                yield message
        finally:
            await frames.aclose()


def _delete_options(
    request: registry_pb2.DeleteRequest | registry_pb2.DeleteCollectionRequest,
) -> DeleteOptions:
    return DeleteOptions(
        propagation_policy=(
            request.propagation_policy if request.HasField("propagation_policy") else None
        ),
        orphan_dependents=(
            request.orphan_dependents if request.HasField("orphan_dependents") else None
        ),
    )
