"""RegistryServicer: strata.registry.v1.Registry over the generic Stores."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Protocol, TypeVar

import grpc
import orjson

from services.registry.generic import requester, warnings
from services.registry.generic.deletion import DeleteOptions
from services.registry.generic.options import Page, Paging, Rendering, Selection
from services.registry.generic.patching.patcher import Patch
from services.registry.generic.store import Store
from services.registry.served import ServedStores
from services.registry.watches import Opened, Route, serve_watches
from strata import pipeline, protowire, service, telemetry
from strata.api import errors
from strata.api.errors import StatusError
from strata.api.wire import REGISTRY_SERVICE_NAME, abort_with_status, failure
from strata.pipeline import Operation
from strata.proto.registry.v1 import registry_pb2, registry_pb2_grpc
from strata.storage import GrpcStorage, Preconditions

Context = grpc.aio.ServicerContext[object, object]
T = TypeVar("T")
_tracer = telemetry.tracer("strata.registry.server")
_log = telemetry.get_logger("strata.registry.server")


async def _answer(context: Context, call: Callable[[], Awaitable[T]]) -> T:
    """call's result, or the call ended with its Status for the gateway to render."""
    try:
        return await call()
    except StatusError as e:
        await abort_with_status(context, e)
        raise


def _decoding(message: registry_pb2.Decoding) -> warnings.Decoding:
    return warnings.Decoding(
        strict_errors=list(message.strict_errors),
        converted=message.converted,
        patch=message.patch if message.HasField("patch") else None,
    )


async def _object(
    call: Callable[[], Awaitable[bytes]],
    field_validation: str = "",
    decoding: registry_pb2.Decoding | None = None,
    acting: requester.Requester | None = None,
) -> registry_pb2.ObjectResponse:
    """The object call answers, with the warnings it gave on the way; or, when
    the call (made for acting) needs the authorizer's answers first, the
    questions."""
    known = _decoding(decoding) if decoding is not None else None
    with warnings.collecting(field_validation, known) as given, requester.acting_for(acting):
        try:
            body = await call()
        except requester.Unanswered as e:
            asked = [requester.question_message(q) for q in e.questions]
            return registry_pb2.ObjectResponse(questions=asked)
    return registry_pb2.ObjectResponse(object=body, warnings=given)


def _acting(
    request: registry_pb2.CreateRequest | registry_pb2.UpdateRequest,
) -> requester.Requester | None:
    """Who a write is for (None: the registry's own controllers)."""
    if not request.HasField("requester"):
        return None
    return requester.requester_of(request.requester, request.resource.namespace, request.name)


class SubresourceCreator(Protocol):
    """A subresource created on an object rather than stored (kube's
    NamedCreater: a ServiceAccount's token)."""

    async def create(
        self, namespace: str, name: str, body: bytes, *, dry_run: bool, field_manager: str
    ) -> bytes: ...


# Which subresource creator serves (group, resource, subresource).
Creators = Mapping[tuple[str, str, str], SubresourceCreator]


def _api_resource(store: Store, creators: Creators) -> registry_pb2.APIResource:
    r = store.resource
    created = [sub for (g, name, sub) in creators if (g, name) == (r.group, r.name)]
    return registry_pb2.APIResource(
        group=r.group,
        version=r.version,
        name=r.name,
        singular_name=r.singular,
        kind=r.kind,
        namespaced=r.namespaced,
        verbs=r.verbs,
        short_names=r.short_names,
        categories=r.categories,
        subresources=[*r.subresources, *created],
        custom=r.custom,
        list_kind=r.list_kind or f"{r.kind}List",
        schema=orjson.dumps(r.schema) if r.schema is not None else b"",
    )


def _rendering(message: registry_pb2.Rendering) -> Rendering:
    return Rendering(as_table=message.as_table, include_object=message.include_object)


def _selection(store: Store, namespace: str, options: registry_pb2.ListOptions) -> Selection:
    return store.selection(
        namespace,
        options.label_selector,
        options.field_selector,
        owned_or_deleting=options.owned_or_deleting,
    )


def _list_response(page: Page) -> registry_pb2.ListResponse:
    response = registry_pb2.ListResponse(
        items=page.items, resource_version=page.resource_version, table=page.table
    )
    setattr(response, "continue", page.continue_token)  # a Python keyword
    if page.remaining_item_count is not None:
        response.remaining_item_count = page.remaining_item_count
    return response


# The answer fields of a Result (registry.proto), by name.
_result = protowire.ResultWriter({"object": 2, "list": 3, "failure": 4})


def _list_bytes(page: Page) -> protowire.Pieces:
    """What _list_response(page) serializes to, written without the message and
    left in pieces: a list of thousands of objects is copied once, into the
    Results carrying it (see strata.protowire)."""
    return protowire.repeated_bytes(
        1,
        page.items,
        (2, page.resource_version or None),
        (3, page.table or None),
        (4, page.continue_token.encode() or None),
        (5, page.remaining_item_count),
    )


def _failure_bytes(error: StatusError) -> bytes:
    return failure(error).SerializeToString()


def _unexpected(request: object, description: str) -> bytes:
    """A bug's failure, as its unary RPC would have ended: UNKNOWN."""
    unknown = registry_pb2.Failure(code=grpc.StatusCode.UNKNOWN.value[0], details=description)
    return unknown.SerializeToString()


_EMPTY_CALL = registry_pb2.Failure(
    code=grpc.StatusCode.INVALID_ARGUMENT.value[0], details="empty call"
).SerializeToString()


def _send_initial_events(options: registry_pb2.ListOptions) -> bool | None:
    """sendInitialEvents as the request gave it, or None when it did not."""
    if options.HasField("send_initial_events"):
        return options.send_initial_events
    return None


class RegistryServicer(registry_pb2_grpc.RegistryServicer):
    def __init__(
        self, served: ServedStores, storage: GrpcStorage, creators: Creators | None = None
    ) -> None:
        self._storage = storage
        self._served = served
        self._creators: Creators = creators or {}
        self._pipeline = pipeline.Dispatcher(
            REGISTRY_SERVICE_NAME,
            {  # pipelined call kind -> its operation
                "create": Operation("Create", self._create, "object"),
                "get": Operation("Get", self._get, "object"),
                "list": Operation("List", self._list, "list", _list_bytes),
                "update": Operation("Update", self._update, "object"),
                "delete": Operation("Delete", self._delete, "object"),
                "delete_collection": Operation(
                    "DeleteCollection", self._delete_collection, "list", _list_bytes
                ),
            },
            _result,
            refused=StatusError,
            failure=_failure_bytes,
            unexpected=_unexpected,
            empty=_EMPTY_CALL,
            tracer=_tracer,
            log=_log,
        )

    async def _store(self, ref: registry_pb2.ResourceRef) -> Store:
        return await self._served.lookup(ref.group, ref.version, ref.resource)

    async def ListResources(
        self, request: registry_pb2.ListResourcesRequest, context: Context
    ) -> registry_pb2.ListResourcesResponse:
        stores = await _answer(context, self._served.every)
        return registry_pb2.ListResourcesResponse(
            resources=[_api_resource(s, self._creators) for s in stores]
        )

    async def GetResource(
        self, request: registry_pb2.ResourceRef, context: Context
    ) -> registry_pb2.APIResource:
        store = await _answer(context, lambda: self._store(request))
        return _api_resource(store, self._creators)

    # --- the calls, each run by its unary RPC and by the Pipeline ----------------

    async def _create(self, request: registry_pb2.CreateRequest) -> registry_pb2.ObjectResponse:
        ref = request.resource

        async def create() -> bytes:
            store = await self._store(ref)
            if request.subresource:
                creator = self._creators.get((ref.group, ref.resource, request.subresource))
                if creator is None:
                    raise errors.path_not_found()
                return await creator.create(
                    ref.namespace,
                    request.name,
                    request.body,
                    dry_run=request.dry_run,
                    field_manager=request.field_manager,
                )
            return await store.create(
                ref.namespace,
                request.body,
                dry_run=request.dry_run,
                field_manager=request.field_manager,
            )

        return await _object(create, request.field_validation, request.decoding, _acting(request))

    async def _get(self, request: registry_pb2.GetRequest) -> registry_pb2.ObjectResponse:
        ref = request.resource

        async def get() -> bytes:
            store = await self._store(ref)
            return await store.get(
                ref.namespace,
                request.name,
                request.resource_version,
                _rendering(request.rendering),
                request.subresource,
            )

        return await _object(get)

    async def _list(self, request: registry_pb2.ListRequest) -> Page:
        options = request.options
        store, selection, paging = await self._listing(request.resource, options)
        return await store.list(selection, paging, _rendering(options.rendering))

    async def _delete_collection(self, request: registry_pb2.DeleteCollectionRequest) -> Page:
        store, selection, paging = await self._listing(request.resource, request.options)
        return await store.delete_collection(
            selection, paging, dry_run=request.dry_run, options=_delete_options(request)
        )

    async def _listing(
        self, ref: registry_pb2.ResourceRef, options: registry_pb2.ListOptions
    ) -> tuple[Store, Selection, Paging]:
        store = await self._store(ref)
        selection = _selection(store, ref.namespace, options)
        paging = Paging(
            resource_version=options.resource_version,
            resource_version_match=options.resource_version_match,
            limit=options.limit,
            continue_token=getattr(options, "continue"),
            send_initial_events=_send_initial_events(options),
        )
        return store, selection, paging

    async def _update(self, request: registry_pb2.UpdateRequest) -> registry_pb2.ObjectResponse:
        ref = request.resource
        created = False

        async def update() -> bytes:
            nonlocal created
            store = await self._store(ref)
            if request.HasField("patch"):
                sent = request.patch
                value, created = await store.patch(
                    ref.namespace,
                    request.name,
                    Patch(type=sent.type, body=sent.body, force=sent.force),
                    dry_run=request.dry_run,
                    subresource=request.subresource,
                    field_manager=request.field_manager,
                )
                return value
            return await store.update(
                ref.namespace,
                request.name,
                request.body,
                dry_run=request.dry_run,
                subresource=request.subresource,
                field_manager=request.field_manager,
            )

        response = await _object(
            update, request.field_validation, request.decoding, _acting(request)
        )
        response.created = created
        return response

    async def _delete(self, request: registry_pb2.DeleteRequest) -> registry_pb2.ObjectResponse:
        preconditions = None
        if request.precondition_uid or request.precondition_resource_version:
            preconditions = Preconditions(
                uid=request.precondition_uid,
                resource_version=request.precondition_resource_version,
            )
        ref = request.resource
        pending = False

        async def delete() -> bytes:
            nonlocal pending
            store = await self._store(ref)
            deleted = await store.deletion(
                ref.namespace,
                request.name,
                preconditions,
                dry_run=request.dry_run,
                options=_delete_options(request),
            )
            pending = not deleted.gone
            return deleted.body

        response = await _object(delete)
        response.pending = pending
        return response

    # --- unary RPCs ----------------------------------------------------------------

    async def Create(
        self, request: registry_pb2.CreateRequest, context: Context
    ) -> registry_pb2.ObjectResponse:
        return await _answer(context, lambda: self._create(request))

    async def Get(
        self, request: registry_pb2.GetRequest, context: Context
    ) -> registry_pb2.ObjectResponse:
        return await _answer(context, lambda: self._get(request))

    async def List(
        self, request: registry_pb2.ListRequest, context: Context
    ) -> registry_pb2.ListResponse:
        return _list_response(await _answer(context, lambda: self._list(request)))

    async def DeleteCollection(
        self, request: registry_pb2.DeleteCollectionRequest, context: Context
    ) -> registry_pb2.ListResponse:
        return _list_response(await _answer(context, lambda: self._delete_collection(request)))

    async def Update(
        self, request: registry_pb2.UpdateRequest, context: Context
    ) -> registry_pb2.ObjectResponse:
        return await _answer(context, lambda: self._update(request))

    async def Delete(
        self, request: registry_pb2.DeleteRequest, context: Context
    ) -> registry_pb2.ObjectResponse:
        return await _answer(context, lambda: self._delete(request))

    # --- the pipeline --------------------------------------------------------------

    async def Pipeline(  # type: ignore[override]  # yields Results as bytes: see add_to_server
        self, request_iterator: AsyncIterator[registry_pb2.Calls], context: Context
    ) -> AsyncIterator[bytes]:
        results = self._pipeline.stream(request_iterator)
        try:
            async for message in results:
                yield message
        finally:
            await results.aclose()

    async def _watch_target(self, request: registry_pb2.WatchRequest) -> Opened:
        """Where a watch goes; raises the Status that refuses it."""
        store = await self._store(request.resource)
        options = request.options
        selection = _selection(store, request.resource.namespace, options)
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


def add_to_server(servicer: RegistryServicer, server: grpc.aio.Server) -> None:
    """Register servicer as strata.registry.v1.Registry, its Pipeline answering
    with the wire bytes it writes itself."""
    service.add_servicer(
        registry_pb2_grpc.add_RegistryServicer_to_server,
        servicer,
        server,
        REGISTRY_SERVICE_NAME,
        answering_bytes=("Pipeline",),
    )
