"""The generic Store: one implementation of create/get/list/update/delete/watch
for every resource, specialised only by the resource's catalog entry and
strategy (kube's registry/generic/registry.Store).

Storage errors are interpreted into API Status here; nothing above the registry
sees a storage error.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson

from services.registry import schema, tables, typed, warnings
from services.registry.bodies import decode_body
from services.registry.deletion import DeleteOptions
from services.registry.known_namespaces import KnownNamespaces
from services.registry.resources import NAMESPACES, Resource
from services.registry.strategy import (
    DecodableStrategy,
    Finish,
    WarningStrategy,
    WriteHooks,
    assign,
    check_decodable,
    lookup,
    validate_finalizers,
)
from strata.api import errors, key_order, managed_fields, meta, names
from strata.api.causes import forbidden, invalid_value, not_supported
from strata.api.errors import Cause, StatusError
from strata.api.schemas import OBJECT_META
from strata.api.selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from strata.api.versions import parse_resource_version
from strata.proto.storage.v1 import storage_pb2
from strata.storage import (
    EXACT,
    NOT_OLDER_THAN,
    Conflict,
    CorruptObject,
    Expired,
    GetOptions,
    InvalidObject,
    InvalidRequest,
    KeyExists,
    KeyNotFound,
    ListOptions,
    ObjectTooLarge,
    Preconditions,
    Predicate,
    Storage,
    StorageError,
    TooLargeResourceVersion,
    Unavailable,
    WatchOptions,
    check_preconditions,
    guaranteed_update,
)

Obj = dict[str, Any]
# (Store's own list method shadows the builtin inside the class.)
Items = list[bytes]
_GENERATE_NAME_ATTEMPTS = 8
TERMINATING = "Terminating"
# kube's NamespaceLifecycle keeps these whatever a client asks.
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
# The annotation on the BOOKMARK that ends a watch-list's initial events.
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
_EVENT_TYPES = {
    storage_pb2.WatchEvent.ADDED: "ADDED",
    storage_pb2.WatchEvent.MODIFIED: "MODIFIED",
    storage_pb2.WatchEvent.DELETED: "DELETED",
    storage_pb2.WatchEvent.BOOKMARK: "BOOKMARK",
}


@dataclass(frozen=True, kw_only=True)
class Selection:
    """Which objects a list or watch returns: a namespace (or all) and selectors,
    checked here and evaluated by storage."""

    namespace: str = ""
    labels: LabelSelector = dataclasses.field(default_factory=LabelSelector)
    fields: FieldSelector = dataclasses.field(default_factory=FieldSelector)
    predicate: Predicate = dataclasses.field(default_factory=Predicate)


@dataclass(frozen=True, kw_only=True)
class Paging:
    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    # Given only to be refused: a list must not carry sendInitialEvents.
    send_initial_events: bool | None = None


@dataclass(frozen=True, kw_only=True)
class Page:
    items: list[bytes]
    resource_version: int
    table: bytes = b""
    continue_token: str = ""
    remaining_item_count: int | None = None


@dataclass(frozen=True, kw_only=True)
class Deletion:
    """A delete's answer (the object, or a Success Status) and whether the
    object went, rather than being only marked while finalizers hold it."""

    gone: bool
    body: bytes


@dataclass(frozen=True, kw_only=True)
class Rendering:
    as_table: bool = False
    include_object: str = ""


@dataclass(frozen=True, kw_only=True)
class WatchItem:
    type: str
    object: bytes


def check_list_options(
    resource_version: str,
    match: str,
    continue_token: str,
    send_initial_events: bool | None = None,
) -> None:
    """apimachinery's ValidateListOptions for a list: 422 ListOptions."""
    causes = []
    if match:
        if not resource_version:
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if continue_token:
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match not in (NOT_OLDER_THAN, EXACT):
            causes.append(not_supported("resourceVersionMatch", match, (EXACT, NOT_OLDER_THAN, "")))
        if match == EXACT and resource_version == "0":
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if send_initial_events is not None:
        causes.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    if causes:
        raise errors.invalid("ListOptions", "", causes, "meta.k8s.io")


def check_watch_options(match: str, continue_token: str, send_initial_events: bool | None) -> None:
    """apimachinery's ValidateListOptions for a watch (the WatchList feature on):
    422 ListOptions."""
    causes = []
    if send_initial_events is not None and match != NOT_OLDER_THAN:
        causes.append(
            forbidden(
                "resourceVersionMatch",
                f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}",
            )
        )
    if match:
        if send_initial_events is None:
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if match != NOT_OLDER_THAN:
            causes.append(not_supported("resourceVersionMatch", match, (NOT_OLDER_THAN,)))
        if continue_token:
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
    if causes:
        raise errors.invalid("ListOptions", "", causes, "meta.k8s.io")


def held(obj: Obj, resource: Resource) -> bool:
    """Whether finalizers hold obj's deletion back."""
    if obj.get("metadata", {}).get("finalizers"):
        return True
    return resource.spec_finalizers and bool((obj.get("spec") or {}).get("finalizers"))


def _deletion_finalizers(
    resource: Resource, options: DeleteOptions, finalizers: list[str], marking: bool
) -> list[str]:
    """The finalizers a deletion leaves an object with, before the resource's
    own (kube: the generic Store's garbage-collection finalizers; the namespace
    registry's, on its first delete only; none where the resource's
    garbage-collection policy is Unsupported, or, as a CRD's, its registry
    marks it without them)."""
    if resource.spec_finalizers:
        return options.namespace_finalizers(finalizers) if marking else finalizers
    if not resource.garbage_collected:
        return finalizers
    return options.finalizers(finalizers)


def _finalized(stored: storage_pb2.Object, resource: Resource) -> bool:
    """Whether an object being deleted has no finalizers left."""
    obj = orjson.loads(stored.value)
    return bool(obj.get("metadata", {}).get("deletionTimestamp")) and not held(obj, resource)


def _version(resource_version: str) -> int:
    """The revision a request's resourceVersion names (0 for none, or not one:
    such an update is refused as a conflict once the current object is read)."""
    try:
        return parse_resource_version(resource_version)
    except ValueError:
        return 0


async def _nothing_to_finish(stored: bool) -> None:
    pass


class Store:
    def __init__(
        self,
        resource: Resource,
        storage: Storage,
        hooks: WriteHooks | None = None,
        *,
        ttl_seconds: int = 0,
        namespaces: KnownNamespaces | None = None,
    ) -> None:
        self.resource = resource
        self._storage = storage
        # What a create's namespace check reads first (else storage alone).
        self._namespaces = namespaces
        self._strategy = resource.strategy
        # What else the strategy does, found once: a runtime_checkable
        # protocol's isinstance inspects the class on every call.
        strategy = resource.strategy
        self._warning = strategy if isinstance(strategy, WarningStrategy) else None
        self._decodable = strategy if isinstance(strategy, DecodableStrategy) else None
        self._hooks = hooks
        # Every write (creates and updates alike) stores the object for this
        # long from then (kube's TTLFunc; events), 0 for ever.
        self._ttl = ttl_seconds
        self._converts = resource.storage_api_version != resource.api_version
        # The types kube's decoder holds a request's object to: every kind's
        # metadata, and a built-in kind's own fields (a custom resource's schema
        # validation answers for its own).
        # Which lists managedFields track item by item (containers by name...).
        self._shapes = managed_fields.list_shapes(resource.schema)
        own = (resource.schema or {}) if not resource.custom else {}
        self._decoded_types: Obj = {
            **own,
            "type": "object",
            "properties": {**(own.get("properties") or {}), "metadata": OBJECT_META},
        }

    # --- versions ----------------------------------------------------------------

    def _decode(self, body: bytes) -> tuple[Obj, bool]:
        """A request body as an object of this resource: without the fields its
        schema does not know (reported as the request's fieldValidation asks),
        normalized; and whether all its values are of their schema's types (the
        typed walk went through all of it, so _check_types need not walk again)."""
        r = self.resource
        obj = decode_body(body, r)
        typed_ok = typed.decoded(obj, self._decoded_types) is None
        unknown = schema.prune(obj, r.schema) if r.schema is not None else []
        warnings.undecoded_fields(r.kind, r.version, body, unknown, typed=not r.custom)
        if r.normalize is not None:
            r.normalize(obj)  # a custom resource's defaults: walked again after
            typed_ok = False
        return obj, typed_ok

    def _check_types(self, obj: Obj, typed_ok: bool = False) -> None:
        """kube's decoder's 400 for a value of the wrong type: in its own words
        where the strategy names the Go types, else from the kind's schema. A
        second walk of obj, which also makes Go's values of the nulls the store
        may have put in (an update's creationTimestamp from an old object without
        one), unless typed_ok: the body's own walk found every value typed and
        only strings were added since (a create's)."""
        r = self.resource
        if self._decodable is not None:
            check_decodable(obj, r.kind, r.version, self._decodable.go_types)
        if not typed_ok:
            typed.check(obj, self._decoded_types, r.kind, r.version)

    def _encoded(self, obj: Obj) -> bytes:
        """obj as storage keeps it: at the storage version."""
        if self._converts:
            obj = {**obj, "apiVersion": self.resource.storage_api_version}
        return orjson.dumps(obj)

    def _loaded(self, value: bytes) -> Obj:
        """A stored object at the version served here."""
        obj: Obj = orjson.loads(value)
        if self._converts:
            obj["apiVersion"] = self.resource.api_version
        return obj

    def _answered(self, obj: Obj) -> bytes:
        """An object storage never saw (a dry run's) as storage would answer it:
        in kube's key order."""
        return key_order.dumps(obj, custom=self.resource.custom)

    def _served(self, value: bytes) -> bytes:
        """A stored object's JSON at the version served here."""
        return orjson.dumps(self._loaded(value)) if self._converts else value

    # --- error interpretation --------------------------------------------------

    @contextmanager
    def _interpreted(self, name: str = "") -> Iterator[None]:
        r = self.resource
        try:
            yield
        except KeyNotFound:
            raise errors.not_found(r.name, name, r.group) from None
        except KeyExists:
            raise errors.already_exists(r.name, name, r.group) from None
        except Conflict as e:
            detail = e.message if "Precondition" in e.message else errors.OBJECT_MODIFIED
            raise errors.conflict(r.name, name, detail, r.group) from None
        except Expired as e:
            raise errors.gone(e.message, e.continue_token) from None
        except TooLargeResourceVersion as e:
            raise errors.too_large_resource_version(e.message) from None
        except ObjectTooLarge as e:
            raise errors.too_large(e.message) from None
        except (InvalidObject, InvalidRequest) as e:
            raise errors.bad_request(e.message) from None
        except CorruptObject as e:
            raise errors.internal(f"cannot read {r.name} {name!r} ({e.key}): {e.message}") from None
        except Unavailable as e:
            raise errors.service_unavailable(f"storage is unavailable: {e.message}") from None
        except StorageError as e:
            raise errors.internal(e.message) from None

    def _check_namespace_arg(self, namespace: str) -> None:
        if self.resource.namespaced and not namespace:
            raise errors.bad_request("a namespace must be given for namespaced resources")

    def _check_subresource(self, subresource: str) -> None:
        if subresource and subresource not in self.resource.subresources:
            raise errors.path_not_found()

    # --- the scale subresource -------------------------------------------------

    def _scale_of(self, obj: Obj) -> Obj:
        """The autoscaling/v1 Scale of an object (kube's scaleFromDeployment)."""
        rules = self.resource.scale
        assert rules is not None
        metadata = obj.get("metadata") or {}
        status: Obj = {"replicas": lookup(obj, rules.status_replicas) or 0}
        if selector := rules.selector(obj):
            status["selector"] = selector
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: metadata[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in metadata
            },
            "spec": {"replicas": lookup(obj, rules.spec_replicas) or 0},
            "status": status,
        }

    def _decode_scale(self, body: bytes, namespace: str, name: str) -> tuple[int, str]:
        """The replicas a Scale body asks for and the resourceVersion it names;
        a Scale that is not one is 400, a negative count 422 (Scale.autoscaling)."""
        try:
            scale = orjson.loads(body)
        except orjson.JSONDecodeError as e:
            raise errors.bad_request(f"the object provided is not valid JSON: {e}") from None
        if not isinstance(scale, dict) or not isinstance(scale.get("metadata", {}), dict):
            raise errors.bad_request("the object provided is not a Scale")
        if (
            scale.setdefault("kind", "Scale"),
            scale.setdefault("apiVersion", "autoscaling/v1"),
        ) != (
            "Scale",
            "autoscaling/v1",
        ):
            raise errors.bad_request(
                f"the kind in the data ({scale['kind']}, {scale['apiVersion']}) does not match "
                "the expected kind (Scale, autoscaling/v1)"
            )
        metadata = scale.get("metadata") or {}
        self._check_names(metadata, namespace, name)
        check_decodable(scale, "Scale", "v1", (("spec.replicas", "ScaleSpec", "int32"),))
        replicas: int = (scale.get("spec") or {}).get("replicas", 0)
        if replicas < 0:
            cause = invalid_value("spec.replicas", replicas, "must be greater than or equal to 0")
            raise errors.invalid("Scale", name, [cause], "autoscaling")
        return replicas, str(metadata.get("resourceVersion") or "")

    # --- create ----------------------------------------------------------------

    async def create(
        self, namespace: str, body: bytes, *, dry_run: bool = False, field_manager: str = ""
    ) -> bytes:
        """The stored object; with dry_run, what would have been stored (no
        resourceVersion), after every check a real create makes. The fields it
        sets are field_manager's (metadata.managedFields)."""
        r = self.resource
        self._check_namespace_arg(namespace)
        obj, typed_ok = self._decode(body)
        metadata = obj["metadata"]
        if r.namespaced:
            if metadata.get("namespace") and metadata["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        generate = metadata.get("generateName", "") if not metadata.get("name") else ""
        for field in (
            "uid",
            "resourceVersion",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            metadata.pop(field, None)
        metadata["creationTimestamp"] = meta.now_rfc3339()
        self._check_types(obj, typed_ok)
        self._strategy.prepare_for_create(obj)
        managed_fields.record_update(None, obj, field_manager, r.api_version, self._shapes)
        for attempt in range(_GENERATE_NAME_ATTEMPTS):
            if generate:
                metadata["name"] = names.generate_name(generate)
            causes = self._strategy.validate(obj)
            if causes:
                raise errors.invalid(r.kind, metadata.get("name", ""), causes, r.group)
            if self._warning is not None:
                for text in self._warning.warnings_on_create(obj):
                    warnings.warn(text)
            if r.namespaced:
                await self._require_namespace(namespace, metadata["name"])
            metadata["uid"] = str(uuid.uuid4())
            key = r.key(namespace, metadata["name"])
            finish: Finish = _nothing_to_finish
            if self._hooks is not None:
                finish = await self._hooks.begin_create(obj, dry_run=dry_run)
            stored = None
            try:
                with self._interpreted(metadata["name"]):
                    if dry_run:
                        await self._refuse_taken(key)
                        return self._answered(obj)
                    stored = await self._storage.create(
                        key, self._encoded(obj), ttl_seconds=self._ttl
                    )
                return self._served(stored.value)
            except StatusError as e:
                if (
                    not generate
                    or e.reason != "AlreadyExists"
                    or attempt + 1 == _GENERATE_NAME_ATTEMPTS
                ):
                    raise
            finally:
                await finish(stored is not None)
        raise AssertionError("unreachable")

    async def _refuse_taken(self, key: str) -> None:
        """KeyExists when key holds an object (a dry-run create's check)."""
        try:
            await self._storage.get(key, GetOptions(resource_version=""))
        except KeyNotFound:
            return
        raise KeyExists(key, "key exists")

    async def _require_namespace(self, namespace: str, name: str) -> None:
        # As kube's NamespaceLifecycle: the informer's namespaces, then the
        # cache, and a live read before refusing, since a namespace created a
        # moment ago may not have reached either yet.
        found = self._namespaces.cached(namespace) if self._namespaces is not None else None
        if found is None:
            found = orjson.loads((await self._stored_namespace(namespace)).value)
        if (found.get("status") or {}).get("phase") == TERMINATING:
            raise errors.forbidden(
                self.resource.name,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
                self.resource.group,
                (
                    Cause(
                        reason="NamespaceTerminating",
                        message=f"namespace {namespace} is being terminated",
                        field="metadata.namespace",
                    ),
                ),
            )

    async def _stored_namespace(self, namespace: str) -> storage_pb2.Object:
        key = NAMESPACES.key("", namespace)
        with self._interpreted(namespace):
            try:
                return await self._storage.get(key, GetOptions(resource_version="0"))
            except KeyNotFound:
                try:
                    return await self._storage.get(key, GetOptions(resource_version=""))
                except KeyNotFound:
                    raise errors.not_found(NAMESPACES.name, namespace) from None

    # --- reads -----------------------------------------------------------------

    async def get(
        self,
        namespace: str,
        name: str,
        resource_version: str,
        rendering: Rendering,
        subresource: str = "",
    ) -> bytes:
        self._check_namespace_arg(namespace)
        self._check_subresource(subresource)
        with self._interpreted(name):
            obj = await self._storage.get(
                self.resource.key(namespace, name), GetOptions(resource_version=resource_version)
            )
        value = self._served(obj.value)
        if subresource == "scale":
            return orjson.dumps(self._scale_of(orjson.loads(value)))
        if rendering.as_table:
            return tables.table(self.resource, [value], "", rendering.include_object)
        return value

    def selection(
        self,
        namespace: str,
        label_selector: str,
        field_selector: str,
        *,
        owned_or_deleting: bool = False,
    ) -> Selection:
        return Selection(
            namespace=namespace if self.resource.namespaced else "",
            labels=parse_label_selector(label_selector),
            fields=parse_field_selector(
                field_selector,
                self.resource.field_selectors,
                field_label_conversion=self.resource.field_label_conversion,
            ),
            predicate=Predicate(
                label_selector=label_selector,
                field_selector=field_selector,
                owned_or_deleting=owned_or_deleting,
            ),
        )

    async def list(self, selection: Selection, paging: Paging, rendering: Rendering) -> Page:
        """A page of items (or a Table of them) and the list's resourceVersion."""
        if rendering.as_table:
            tables.check_include_object(rendering.include_object)
        check_list_options(
            paging.resource_version,
            paging.resource_version_match,
            paging.continue_token,
            paging.send_initial_events,
        )
        with self._interpreted():
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
        items = [self._served(o.value) for o in result.items]
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
        """The storage key and options of a watch (a single key for a watch on one
        name, as kube's cacher does for metadata.name selectors)."""
        check_watch_options(resource_version_match, continue_token, send_initial_events)
        if rendering.as_table:
            tables.check_include_object(rendering.include_object)
        name = selection.fields.exact("metadata.name")
        if name is not None and (selection.namespace or not self.resource.namespaced):
            key, recursive = self.resource.key(selection.namespace, name), False
        else:
            key, recursive = self.resource.key_prefix(selection.namespace), True
        return key, WatchOptions(
            resource_version=resource_version,
            recursive=recursive,
            predicate=selection.predicate,
            progress_notify=bookmarks,
            send_initial_events=send_initial_events,
            timeout_seconds=timeout_seconds,
        )

    def watch_item(self, event: storage_pb2.WatchEvent, rendering: Rendering) -> WatchItem:
        """A storage event as the watch stream carries it."""
        if event.type == storage_pb2.WatchEvent.BOOKMARK:
            return WatchItem(type="BOOKMARK", object=self._bookmark(event))
        value = self._served(event.object.value)
        if rendering.as_table:
            value = tables.table(self.resource, [value], "", rendering.include_object)
        return WatchItem(type=_EVENT_TYPES[event.type], object=value)

    def watch_error(self, error: StorageError) -> WatchItem:
        """The ERROR event for a storage error that ended a watch, as in kube."""
        try:
            with self._interpreted():
                raise error
        except StatusError as e:
            return WatchItem(type="ERROR", object=e.to_json())
        raise AssertionError("unreachable: every storage error is interpreted")

    def _bookmark(self, event: storage_pb2.WatchEvent) -> bytes:
        """A BOOKMARK's object: the resource's kind with only a resourceVersion (as
        kube), annotated k8s.io/initial-events-end when it ends a watch-list's state."""
        metadata: dict[str, Any] = {"resourceVersion": str(event.resource_version)}
        if event.initial_events_end:
            metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
        return orjson.dumps(
            {
                "kind": self.resource.kind,
                "apiVersion": self.resource.api_version,
                "metadata": metadata,
            }
        )

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
        self._check_namespace_arg(namespace)
        self._check_subresource(subresource)
        build: Callable[[Obj], Obj]
        if subresource == "scale":
            replicas, requested_rv = self._decode_scale(body, namespace, name)
            assert r.scale is not None
            spec_replicas = r.scale.spec_replicas

            def build(old: Obj) -> Obj:
                new = copy.deepcopy(old)
                assign(new, spec_replicas, replicas)
                return new

        else:
            obj, _ = self._decode(body)
            self._check_names(obj["metadata"], namespace, name)
            requested_rv = str(obj["metadata"].get("resourceVersion", ""))
            if subresource == "status":

                def build(old: Obj) -> Obj:
                    # Everything but status stays as it is (kube's ResetObjectMetaForStatus).
                    new = copy.deepcopy(old)
                    new["status"] = obj.get("status") or {}
                    return new

            elif subresource == "finalize":

                def build(old: Obj) -> Obj:
                    # Only spec.finalizers changes (kube's namespace finalize).
                    new = copy.deepcopy(old)
                    finalizers = (obj.get("spec") or {}).get("finalizers") or []
                    new.setdefault("spec", {})["finalizers"] = finalizers
                    return new

            else:
                build = functools.partial(self._replacement, obj, namespace, name)

        async def apply(current: storage_pb2.Object) -> bytes:
            if requested_rv and requested_rv != str(current.resource_version):
                raise Conflict(current.key, "stale resourceVersion")
            old = self._loaded(current.value)
            new = build(old)
            if subresource == "status":
                assert r.status is not None
                self._check_types(new)
                causes = r.status.validate_status_update(new, old)
            elif subresource == "finalize":
                causes = [
                    cause
                    for i, finalizer in enumerate(new["spec"]["finalizers"])
                    for cause in validate_finalizers([finalizer], f"spec.finalizers[{i}]")
                ]
            else:
                self._check_types(new)
                self._strategy.prepare_for_update(new, old)
                causes = self._strategy.validate_update(new, old)
                managed_fields.record_update(old, new, field_manager, r.api_version, self._shapes)
            if causes:
                raise errors.invalid(r.kind, name, causes, r.group)
            if not subresource and self._warning is not None:
                for text in self._warning.warnings_on_update(new, old):
                    warnings.warn(text)
            if self._hooks is not None and subresource not in ("status", "finalize"):
                finishes.append(await self._hooks.begin_update(new, old, dry_run=dry_run))
            if new == old:
                return current.value  # the same bytes: guaranteed_update writes nothing
            return self._encoded(new)

        # One Finish per try of apply; only the last try's write can have landed.
        finishes: list[Finish] = []
        landed = -1
        key = r.key(namespace, name)
        try:
            with self._interpreted(name):
                if dry_run:
                    current = await self._storage.get(key, GetOptions(resource_version=""))
                    updated = orjson.loads(await apply(current))
                    # What a real update would answer, but at the revision that stays.
                    updated["metadata"]["resourceVersion"] = str(current.resource_version)
                    value = self._answered(updated)
                else:
                    stored = await guaranteed_update(
                        self._storage,
                        key,
                        apply,
                        ttl_seconds=self._ttl,
                        expected_resource_version=_version(requested_rv),
                    )
                    landed = len(finishes) - 1
                    await self._delete_if_finalized(stored)
                    value = stored.value
        finally:
            for i, finish in enumerate(finishes):
                await finish(i == landed)
        value = self._served(value)
        if subresource == "scale":
            return orjson.dumps(self._scale_of(orjson.loads(value)))
        return value

    def _check_names(self, metadata: Obj, namespace: str, name: str) -> None:
        """A body's name and namespace, when given, must be the URL's (400)."""
        if metadata.get("name", name) != name:
            raise errors.bad_request(
                f"the name of the object ({metadata['name']}) does not match the name on the "
                f"URL ({name})"
            )
        if self.resource.namespaced and metadata.get("namespace", namespace) != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )

    def _replacement(self, obj: Obj, namespace: str, name: str, old: Obj) -> Obj:
        """What a PUT of obj makes of old before the strategy's turn: the server's
        own metadata (kube's BeforeUpdate) put back over what was sent."""
        new = dict(obj)
        new_meta = dict(obj["metadata"])
        new["metadata"] = new_meta
        new_meta["name"] = name
        if self.resource.namespaced:
            new_meta["namespace"] = namespace
        else:
            new_meta.pop("namespace", None)
        old_meta = old.get("metadata", {})
        # The creation time is the server's, whatever was sent; a uid left out is
        # the old one (a different one is refused by validation).
        new_meta["creationTimestamp"] = old_meta.get("creationTimestamp")
        new_meta.setdefault("uid", old_meta.get("uid"))
        # An update never takes back a deletion under way, and the generation is
        # the strategy's to move.
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if field in old_meta:
                new_meta[field] = old_meta[field]
            else:
                new_meta.pop(field, None)
        return new

    async def _delete_if_finalized(self, stored: storage_pb2.Object) -> None:
        """Delete an object whose last finalizer just went while it was being
        deleted. A write that came in between is an update that finishes the job."""
        if _finalized(stored, self.resource):
            gone = Preconditions(resource_version=str(stored.resource_version))
            with contextlib.suppress(Conflict, KeyNotFound):
                await self._storage.delete(stored.key, preconditions=gone)

    async def remove_finalizer(
        self, namespace: str, name: str, finalizer: str, *, spec: bool = False
    ) -> None:
        """Take finalizer out of metadata.finalizers (spec.finalizers with spec,
        what kube's finalize subresource does for namespaces), deleting the
        object if that was the last hold."""

        async def drop(current: storage_pb2.Object) -> bytes:
            obj = orjson.loads(current.value)
            holder = obj.setdefault("spec", {}) if spec else obj["metadata"]
            holder["finalizers"] = [f for f in holder.get("finalizers") or [] if f != finalizer]
            return orjson.dumps(obj)

        with self._interpreted(name):
            stored = await guaranteed_update(
                self._storage, self.resource.key(namespace, name), drop, ttl_seconds=self._ttl
            )
            await self._delete_if_finalized(stored)

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
        self._check_namespace_arg(namespace)
        options.check()
        if r is NAMESPACES and name in IMMORTAL_NAMESPACES:
            raise errors.forbidden(r.name, name, "this namespace may not be deleted")
        if r is NAMESPACES and self._namespaces is not None:
            # Creates into it must see it Terminating before the informer does.
            self._namespaces.deleting(name)
        with self._interpreted(name):
            gone, value = await self._delete(
                r.key(namespace, name), preconditions, dry_run, options
            )
        value = self._served(value)
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
                with self._interpreted(metadata["name"]):
                    _, value = await self._delete(key, None, dry_run, options)
            except StatusError as e:
                if e.reason == "NotFound":
                    continue
                raise
            deleted.append(self._served(value))
        return Page(items=deleted, resource_version=listed.resource_version)

    async def empty(self, namespace: str = "") -> bool:
        """Delete every object (in namespace, when given), each as a client's
        delete would; whether none is left (finalizers may hold some back)."""
        everything = self.selection(namespace, "", "")
        await self.delete_collection(everything, Paging())
        return not (await self.list(everything, Paging(limit=1), Rendering())).items

    async def _delete(
        self,
        key: str,
        preconditions: Preconditions | None,
        dry_run: bool,
        options: DeleteOptions,
    ) -> tuple[bool, bytes]:
        """Whether the object went (else it is only marked), and its last state."""
        while True:  # until a write lands on the state it was decided on
            current = await self._storage.get(key, GetOptions(resource_version=""))
            if preconditions is not None:
                check_preconditions(current, preconditions)
            obj = orjson.loads(current.value)
            metadata = obj["metadata"]
            finalizers = metadata.get("finalizers") or []
            marking = not metadata.get("deletionTimestamp")
            wanted = _deletion_finalizers(self.resource, options, finalizers, marking)
            own = self.resource.deletion_finalizer
            if own and marking and own not in wanted:
                wanted = [*wanted, own]
            if wanted != finalizers:
                metadata["finalizers"] = wanted
            if held(obj, self.resource):
                if not marking and wanted == finalizers:
                    return False, current.value  # marked already: nothing more to do
                if marking and self.resource.on_delete is not None:
                    self.resource.on_delete(obj)
                metadata.setdefault("deletionTimestamp", meta.now_rfc3339())
                if not (self.resource.spec_finalizers or self.resource.deletion_finalizer):
                    # kube's namespace and CRD registries mark only the time.
                    metadata.setdefault("deletionGracePeriodSeconds", 0)
                if self.resource.spec_finalizers:
                    obj.setdefault("status", {})["phase"] = TERMINATING
                if dry_run:
                    return False, self._answered(obj)
                try:
                    marked = await self._storage.update(
                        key,
                        orjson.dumps(obj),
                        expected_resource_version=current.resource_version,
                        ttl_seconds=self._ttl,
                    )
                except Conflict:
                    continue
                return False, marked.value
            if dry_run:
                return True, current.value
            try:
                same = Preconditions(resource_version=str(current.resource_version))
                deleted = await self._storage.delete(key, preconditions=same)
            except Conflict:
                continue
            if self._hooks is not None:
                await self._hooks.after_delete(orjson.loads(deleted.value))
            return True, deleted.value
