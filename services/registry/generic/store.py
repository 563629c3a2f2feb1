"""The generic Store: one implementation of create/get/list/update/delete/watch
for every resource, specialised only by the resource's declaration and
strategy (kube's registry/generic/registry.Store).

Its parts are the modules beside it: decoding and versions (codec.py), a
request's own arguments (arguments.py), creates (create.py), list and watch
options (options.py, watching.py), the scale subresource (scale.py), the
namespace checks (namespace_lifecycle.py), the update loop (update.py) with
what an update builds (update_builds.py) and checks (update_checks.py),
deletion (deletion.py) and the storage-error-to-Status map
(storage_errors.py): nothing above the registry sees a storage error.

What the Store knows beyond its own resource is given to it: where namespaces
are (`Namespaces`), the write hooks of a resource whose writes reach other
state, the guard of who may write what (RBAC's escalation checks), and the
scheme its decoder's refusals name.
"""

from __future__ import annotations

import dataclasses

import orjson

from services.registry.generic import options as list_options
from services.registry.generic import tables, watching
from services.registry.generic.arguments import check_namespace, check_subresource
from services.registry.generic.bodies import NO_SCHEME, Scheme
from services.registry.generic.codec import Codec
from services.registry.generic.create import Creator
from services.registry.generic.declarations import Resource
from services.registry.generic.deletion import DeleteOptions, Deleter, Deletion
from services.registry.generic.namespace_lifecycle import Namespaces
from services.registry.generic.options import Page, Paging, Rendering, Selection
from services.registry.generic.patching.patcher import Patch, Patcher
from services.registry.generic.scale import scaled
from services.registry.generic.storage_errors import interpreted
from services.registry.generic.strategy import DeletionGuard, WriteGuard, WriteHooks
from services.registry.generic.update import UpdatedObjectInfo, update_loop
from services.registry.generic.update_builds import put_info
from services.registry.generic.update_checks import UpdateChecks
from services.registry.generic.watching import WatchItem
from strata.api import errors, managed_fields, patch_types
from strata.api.errors import StatusError
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    GetOptions,
    ListOptions,
    Preconditions,
    Storage,
    StorageError,
    WatchOptions,
)


class Store:
    def __init__(
        self,
        resource: Resource,
        storage: Storage,
        hooks: WriteHooks | None = None,
        *,
        ttl_seconds: int = 0,
        namespaces: Namespaces | None = None,
        scheme: Scheme = NO_SCHEME,
        guard: WriteGuard | None = None,
    ) -> None:
        self.resource = resource
        self._storage = storage
        # Where a create's namespace check looks (none: no check).
        self._namespaces = namespaces
        # Found once: a runtime_checkable protocol's isinstance inspects the
        # class on every call.
        strategy = resource.strategy
        self._guard = strategy if isinstance(strategy, DeletionGuard) else None
        # Every write (creates and updates alike) stores the object for this
        # long from then (kube's TTLFunc; events), 0 for ever.
        self._ttl = ttl_seconds
        self._codec = Codec(resource, scheme)
        # Which lists managedFields track item by item (containers by name...).
        shapes = managed_fields.list_shapes(resource.schema)
        self._creator = Creator(
            self._codec,
            storage,
            shapes,
            namespaces=namespaces,
            hooks=hooks,
            guard=guard,
            ttl_seconds=ttl_seconds,
        )
        self._update_checks = UpdateChecks(self._codec, shapes, hooks, guard)
        self._patcher = Patcher(self._codec, shapes)
        self._deleter = Deleter(
            resource, storage, self._codec.answered, ttl_seconds=ttl_seconds, hooks=hooks
        )

    # --- create ----------------------------------------------------------------

    async def create(
        self, namespace: str, body: bytes, *, dry_run: bool = False, field_manager: str = ""
    ) -> bytes:
        """The stored object; with dry_run, what would have been stored (no
        resourceVersion), after every check a real create makes. The fields it
        sets are field_manager's (metadata.managedFields)."""
        check_namespace(self.resource, namespace)
        return await self._creator.create(namespace, body, dry_run, field_manager)

    # --- reads -----------------------------------------------------------------

    async def get(
        self,
        namespace: str,
        name: str,
        resource_version: str,
        rendering: Rendering,
        subresource: str = "",
    ) -> bytes:
        r = self.resource
        check_namespace(r, namespace)
        check_subresource(r, subresource)
        with interpreted(r, name):
            obj = await self._storage.get(
                r.key(namespace, name), GetOptions(resource_version=resource_version)
            )
        value = self._codec.served(obj.value)
        if subresource == "scale":
            return scaled(r, value)
        if rendering.as_table:
            return tables.table(r, [value], "", rendering.include_object)
        return value

    def selection(
        self,
        namespace: str,
        label_selector: str,
        field_selector: str,
        *,
        owned_or_deleting: bool = False,
    ) -> Selection:
        return list_options.selection(
            self.resource,
            namespace,
            label_selector,
            field_selector,
            owned_or_deleting=owned_or_deleting,
        )

    async def list(self, selection: Selection, paging: Paging, rendering: Rendering) -> Page:
        """A page of items (or a Table of them) and the list's resourceVersion."""
        if rendering.as_table:
            tables.check_include_object(rendering.include_object)
        list_options.check_list_options(
            paging.resource_version,
            paging.resource_version_match,
            paging.continue_token,
            paging.send_initial_events,
        )
        with interpreted(self.resource):
            result = await self._storage.list(
                self.resource.key_prefix(selection.namespace),
                ListOptions(
                    resource_version=paging.resource_version,
                    resource_version_match=paging.resource_version_match,
                    limit=paging.limit,
                    continue_token=paging.continue_token,
                    predicate=selection.predicate,
                ),
            )
        items = [self._codec.served(o.value) for o in result.items]
        page = Page(
            items=items,
            resource_version=result.resource_version,
            continue_token=result.continue_token,
            remaining_item_count=result.remaining_item_count,
        )
        if rendering.as_table:
            table = tables.table(
                self.resource,
                items,
                str(result.resource_version),
                rendering.include_object,
                continue_token=result.continue_token,
                remaining_item_count=result.remaining_item_count,
            )
            return dataclasses.replace(page, items=[], table=table)
        return page

    def watch_target(
        self,
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
        """The storage key and options of a watch (watching.watch_target)."""
        return watching.watch_target(
            self.resource,
            selection,
            resource_version,
            rendering,
            bookmarks=bookmarks,
            resource_version_match=resource_version_match,
            continue_token=continue_token,
            send_initial_events=send_initial_events,
            timeout_seconds=timeout_seconds,
        )

    def watch_item(self, event: storage_pb2.WatchEvent, rendering: Rendering) -> WatchItem:
        """A storage event as the watch stream carries it."""
        return watching.watch_item(self._codec, event, rendering)

    def watch_error(self, error: StorageError) -> WatchItem:
        """The ERROR event for a storage error that ended a watch, as in kube."""
        return watching.watch_error(self.resource, error)

    # --- update ----------------------------------------------------------------

    async def update(
        self,
        namespace: str,
        name: str,
        body: bytes,
        *,
        dry_run: bool = False,
        subresource: str = "",
        field_manager: str = "",
    ) -> bytes:
        """The stored object (a Scale for the scale subresource); with dry_run,
        what would have been stored, at the revision that stays. What a write of
        the object itself changes becomes field_manager's (metadata.managedFields)."""
        r = self.resource
        check_namespace(r, namespace)
        check_subresource(r, subresource)
        info = put_info(self._codec, namespace, name, body, subresource)
        return await self._answered_update(
            namespace, name, info, dry_run, subresource, field_manager
        )

    async def patch(
        self,
        namespace: str,
        name: str,
        patch: Patch,
        *,
        dry_run: bool = False,
        subresource: str = "",
        field_manager: str = "",
    ) -> tuple[bytes, bool]:
        """The object (a Scale for the scale subresource) as patch leaves it,
        the patch applied inside the update loop; and whether a server-side
        apply created it. An apply's fields are field_manager's; another
        patch's changes become field_manager's as an update's do."""
        r = self.resource
        check_namespace(r, namespace)
        check_subresource(r, subresource)
        if patch.type == patch_types.APPLY_PATCH:

            async def update(info: UpdatedObjectInfo, manager: str) -> bytes:
                return await self.guaranteed_update(
                    namespace, name, info, dry_run=dry_run, field_manager=manager
                )

            async def create(body: bytes, manager: str) -> bytes:
                return await self.create(namespace, body, dry_run=dry_run, field_manager=manager)

            return await self._patcher.apply(patch, namespace, name, field_manager, update, create)
        info = UpdatedObjectInfo(
            build=self._patcher.patched(patch, namespace, name, subresource), size=len(patch.body)
        )
        answer = await self._answered_update(
            namespace, name, info, dry_run, subresource, field_manager
        )
        return answer, False

    async def _answered_update(
        self,
        namespace: str,
        name: str,
        info: UpdatedObjectInfo,
        dry_run: bool,
        subresource: str,
        field_manager: str,
    ) -> bytes:
        """guaranteed_update's object, as a Scale for the scale subresource."""
        value = await self.guaranteed_update(
            namespace,
            name,
            info,
            dry_run=dry_run,
            subresource=subresource,
            field_manager=field_manager,
        )
        return scaled(self.resource, value) if subresource == "scale" else value

    async def guaranteed_update(
        self,
        namespace: str,
        name: str,
        info: UpdatedObjectInfo,
        *,
        dry_run: bool = False,
        subresource: str = "",
        field_manager: str = "",
    ) -> bytes:
        """The object info builds from the current one, checked as a write of
        subresource ("" for the object itself) and stored, built again on the
        object read again after each conflict (kube's GuaranteedUpdate): as
        stored, at the version served; with dry_run, what would have been
        stored. The one update path, a PUT's and a subresource's; the caller has
        checked the namespace and subresource (check_namespace, check_subresource)."""
        admit = self._update_checks.of(name, subresource, field_manager, dry_run)
        value = await update_loop(
            self._storage,
            self._codec,
            self.resource.key(namespace, name),
            name,
            info,
            admit,
            ttl_seconds=self._ttl,
            dry_run=dry_run,
        )
        return self._codec.served(value)

    async def remove_finalizer(
        self, namespace: str, name: str, finalizer: str, *, spec: bool = False
    ) -> None:
        """Take finalizer out of metadata.finalizers (spec.finalizers with spec,
        what kube's finalize subresource does for namespaces), deleting the
        object if that was the last hold."""
        with interpreted(self.resource, name):
            key = self.resource.key(namespace, name)
            await self._deleter.remove_finalizer(key, finalizer, spec=spec)

    # --- delete ----------------------------------------------------------------

    async def delete(
        self,
        namespace: str,
        name: str,
        preconditions: Preconditions | None,
        *,
        dry_run: bool = False,
        options: DeleteOptions = DeleteOptions(),
    ) -> bytes:
        """The deleted object (or a Success Status, as the resource answers); an
        object with finalizers (those options add included) is only marked with
        a deletionTimestamp, and that is the answer, until its last finalizer is
        removed."""
        deleted = await self.deletion(
            namespace, name, preconditions, dry_run=dry_run, options=options
        )
        return deleted.body

    async def deletion(
        self,
        namespace: str,
        name: str,
        preconditions: Preconditions | None,
        *,
        dry_run: bool = False,
        options: DeleteOptions = DeleteOptions(),
    ) -> Deletion:
        """delete's answer, and whether the object went (kube's wasDeleted, which
        makes a marking with orphanDependents=false a 202)."""
        r = self.resource
        check_namespace(r, namespace)
        options.check()
        if self._guard is not None and (refused := self._guard.deletion_refused(name)):
            raise errors.forbidden(r.name, name, refused, r.group)
        if self._namespaces is not None and r is self._namespaces.resource:
            # Creates into it must see it Terminating before the cache does.
            self._namespaces.deleting(name)
        with interpreted(r, name):
            gone, value = await self._deleter.delete(
                r.key(namespace, name), preconditions, dry_run, options
            )
        value = self._codec.served(value)
        if not gone or r.return_deleted_object:
            return Deletion(gone=gone, body=value)
        uid = orjson.loads(value).get("metadata", {}).get("uid", "")
        return Deletion(gone=gone, body=orjson.dumps(errors.success(r.name, name, uid, r.group)))

    async def delete_collection(
        self,
        selection: Selection,
        paging: Paging,
        *,
        dry_run: bool = False,
        options: DeleteOptions = DeleteOptions(),
    ) -> Page:
        """Deletes what the list would return, each as delete does; the objects as
        deleted (or marked). One that went meanwhile is left out."""
        options.check()
        listed = await self.list(selection, paging, Rendering())
        deleted = []
        for item in listed.items:
            metadata = orjson.loads(item)["metadata"]
            key = self.resource.key(metadata.get("namespace", ""), metadata["name"])
            try:
                with interpreted(self.resource, metadata["name"]):
                    _, value = await self._deleter.delete(key, None, dry_run, options)
            except StatusError as e:
                if e.reason == "NotFound":
                    continue
                raise
            deleted.append(self._codec.served(value))
        return Page(items=deleted, resource_version=listed.resource_version)

    async def empty(self, namespace: str = "") -> bool:
        """Delete every object (in namespace, when given), each as a client's
        delete would; whether none is left (finalizers may hold some back)."""
        everything = self.selection(namespace, "", "")
        await self.delete_collection(everything, Paging())
        return not (await self.list(everything, Paging(limit=1), Rendering())).items
