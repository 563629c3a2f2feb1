"""The Kubernetes REST handlers: one entry point for every /api and /apis path,
turned into Registry calls. Objects pass through as the registry's JSON bytes;
lists and watch events are framed around them without decoding."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import grpc
import orjson
from aiohttp import web

from services.gateway import apply, kubeproto, negotiation, patches, paths
from services.gateway.catalog import APIResource, Catalog
from services.gateway.output import OUTPUT, go_escaped, indented, partial_event, text_not_found
from services.gateway.watches import RegistryWatches
from strata.api import errors, goquote
from strata.api.causes import not_supported, too_long
from strata.api.errors import Cause, StatusError
from strata.api.managed_fields import ListShapes
from strata.api.wire import status_from_rpc_error
from strata.proto.registry.v1 import registry_pb2
from strata.registry_client import RegistryClient

JSON = "application/json"
# kube's default --min-request-timeout: watches end after 30-60 minutes.
MIN_REQUEST_TIMEOUT_SECONDS = 1800


def _into(api: APIResource, info: paths.RequestInfo) -> tuple[str, str]:
    """The apiVersion and kind a write's body is read as (a Scale for scale)."""
    if info.subresource == "scale":
        return "autoscaling/v1", "Scale"
    return (f"{api.group}/{api.version}" if api.group else api.version), api.kind


def _decoding(body: negotiation.Body) -> registry_pb2.Decoding:
    return registry_pb2.Decoding(strict_errors=body.strict_errors, converted=body.converted)


def json_response(body: bytes, status: int = 200) -> web.Response:
    """body, compact JSON, as kube's encoder writes it (Go's escapes, a newline after)."""
    return web.Response(body=go_escaped(body) + b"\n", status=status, content_type=JSON)


def warning_header(text: str) -> str:
    """A Warning header value as kube-apiserver writes one (code 299, no agent,
    the text quoted as Go quotes it)."""
    return f"299 - {goquote.quote(text)}"


def object_response(answer: registry_pb2.ObjectResponse, status: int = 200) -> web.Response:
    """The registry's object, with the warnings the request earned."""
    response = json_response(answer.object, status)
    for text in answer.warnings:
        response.headers.add("Warning", warning_header(text))
    return response


def status_response(error: StatusError, pretty: bool = False) -> web.Response:
    if pretty:
        response = web.Response(
            body=indented(error.to_json()), status=error.code, content_type=JSON
        )
    else:
        response = json_response(error.to_json(), error.code)
    if error.retry_after_seconds is not None:
        response.headers["Retry-After"] = str(error.retry_after_seconds)
    return response


def _dry_run(values: list[str], options_kind: str) -> bool:
    """Whether the write is a dry run (kube's ValidateDryRun: "All" is the one
    value; anything else is a 422 on the request's options)."""
    if any(v != "All" for v in values):
        cause = not_supported("dryRun", values, ("All",))
        raise errors.invalid(options_kind, "", [cause], "meta.k8s.io")
    return bool(values)


FIELD_VALIDATIONS = ("", "Ignore", "Strict", "Warn")


def _field_validation(request: web.Request, options_kind: str) -> str:
    """The write's fieldValidation (kube's ValidateFieldValidation: one of four
    values, "" among them; anything else is a 422 on the request's options)."""
    value = request.query.get("fieldValidation", "")
    if value not in FIELD_VALIDATIONS:
        cause = not_supported("fieldValidation", value, FIELD_VALIDATIONS)
        raise errors.invalid(options_kind, "", [cause], "meta.k8s.io")
    return value


MAX_FIELD_MANAGER = 128


def _field_manager(request: web.Request, options_kind: str) -> str:
    """Who a write's fields belong to: fieldManager (at most 128 bytes, as kube
    validates it), else the User-Agent's product name as kube derives it."""
    given = request.query.get("fieldManager", "")
    if len(given.encode()) > MAX_FIELD_MANAGER:
        cause = too_long("fieldManager", MAX_FIELD_MANAGER)
        raise errors.invalid(options_kind, "", [cause], "meta.k8s.io")
    if given:
        return given
    product = request.headers.get("User-Agent", "").split("/")[0]
    return "".join(c for c in product if c.isprintable())[:MAX_FIELD_MANAGER]


class ResourceHandlers:
    def __init__(self, registry: RegistryClient, catalog: Catalog) -> None:
        self._registry = registry
        self._catalog = catalog
        self._watches = RegistryWatches(registry.stub)
        self._closing = False

    async def close_watches(self) -> None:
        """End every open watch (on shutdown); clients reconnect and resume."""
        self._closing = True
        self._watches.close()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        info = paths.info_of(request)
        if info is None:
            return await self._nothing_at(request)
        try:
            if not info.resource:
                return await self._discovery(request, info)
            api = await self._catalog.lookup(info.group, info.version, info.resource)
            if api is None:
                return await self._nothing_at(request)
            if info.namespace and not api.namespaced:
                raise errors.path_not_found()
            if info.subresource and info.subresource not in api.subresources:
                raise errors.path_not_found()
            return await self._dispatch(request, info, api)
        except grpc.aio.AioRpcError as e:
            raise status_from_rpc_error(e) from None

    async def _nothing_at(self, request: web.Request) -> web.Response:
        """kube's 404 for a path nothing serves: a Status under /api and the
        groups it serves, Go's plain text under a group it does not."""
        if paths.json_prefixed(request.path, await self._catalog.group_versions()):
            raise errors.path_not_found()
        return text_not_found()

    async def _discovery(self, request: web.Request, info: paths.RequestInfo) -> web.Response:
        if request.method != "GET":
            raise errors.method_not_allowed()
        if not info.version:  # /apis/<group>: the group's APIGroup
            groups = (await self._catalog.api_group_list())["groups"]
            group = next((g for g in groups if g["name"] == info.group), None)
            if group is None:
                return await self._nothing_at(request)
            return json_response(orjson.dumps({"kind": "APIGroup", "apiVersion": "v1", **group}))
        body = await self._catalog.resource_list(info.group, info.version)
        if body is None:
            return await self._nothing_at(request)
        return json_response(orjson.dumps(body))

    async def _dispatch(
        self, request: web.Request, info: paths.RequestInfo, api: APIResource
    ) -> web.StreamResponse:
        ref = registry_pb2.ResourceRef(
            group=info.group, version=info.version, resource=info.resource, namespace=info.namespace
        )
        method = request.method
        if info.subresource:
            return await self._subresource(request, info, api, ref)
        if paths.watching(request, info):
            self._require(api, "watch", info)
            return await self._watch(request, ref)
        if method == "GET" and info.name:
            self._require(api, "get", info)
            return await self._get(request, ref, info.name)
        if method == "GET":
            self._require(api, "list", info)
            return await self._list(request, ref, api)
        if info.watch_path:
            raise errors.method_not_allowed()
        if method == "POST" and not info.name:
            self._require(api, "create", info)
            if api.namespaced and not info.namespace:
                raise errors.path_not_found()
            # As kube's: the options are checked before the body is read.
            dry_run = _dry_run(request.query.getall("dryRun", []), "CreateOptions")
            field_validation = _field_validation(request, "CreateOptions")
            manager = _field_manager(request, "CreateOptions")
            body = await negotiation.body_as_json(
                request.headers.get("Content-Type", ""), await request.read(), _into(api, info)
            )
            created = await self._registry.Create(
                registry_pb2.CreateRequest(
                    resource=ref,
                    body=body.json,
                    dry_run=dry_run,
                    field_validation=field_validation,
                    field_manager=manager,
                    decoding=_decoding(body),
                )
            )
            return object_response(created, 201)
        if method == "PUT" and info.name:
            self._require(api, "update", info)
            return await self._update(request, ref, info, _into(api, info))
        if method == "PATCH" and info.name:
            self._require(api, "patch", info)
            return await self._patch(request, ref, info, api)
        if method == "DELETE" and info.name:
            self._require(api, "delete", info)
            return await self._delete(request, ref, info.name)
        if method == "DELETE":
            self._require(api, "deletecollection", info)
            if api.namespaced and not info.namespace:
                raise errors.method_not_allowed()
            return await self._delete_collection(request, ref, api)
        raise errors.method_not_allowed()

    async def _subresource(
        self,
        request: web.Request,
        info: paths.RequestInfo,
        api: APIResource,
        ref: registry_pb2.ResourceRef,
    ) -> web.Response:
        """GET and PUT of an object's status or scale, PUT of a namespace's finalize."""
        if info.subresource == "finalize" and request.method != "PUT":
            raise errors.method_not_allowed()
        if request.method == "GET" and not paths.watching(request, info):
            self._require(api, "get", info)
            return await self._get(request, ref, info.name, info.subresource)
        if request.method == "PUT":
            self._require(api, "update", info)
            return await self._update(request, ref, info, _into(api, info))
        if request.method == "PATCH":
            self._require(api, "patch", info)
            return await self._patch(request, ref, info, api)
        raise errors.method_not_allowed()

    async def _write(
        self,
        ref: registry_pb2.ResourceRef,
        info: paths.RequestInfo,
        body: bytes,
        *,
        dry_run: bool,
        field_validation: str,
        field_manager: str = "",
        decoding: registry_pb2.Decoding | None = None,
    ) -> registry_pb2.ObjectResponse:
        """An update of the object (or subresource) info names to body."""
        answer: registry_pb2.ObjectResponse = await self._registry.Update(
            registry_pb2.UpdateRequest(
                resource=ref,
                name=info.name,
                body=body,
                dry_run=dry_run,
                subresource=info.subresource,
                field_validation=field_validation,
                field_manager=field_manager,
                decoding=decoding,
            )
        )
        return answer

    async def _update(
        self,
        request: web.Request,
        ref: registry_pb2.ResourceRef,
        info: paths.RequestInfo,
        into: tuple[str, str],
    ) -> web.Response:
        """PUT of an object or of one of its subresources (into: the apiVersion
        and kind its body is read as)."""
        dry_run = _dry_run(request.query.getall("dryRun", []), "UpdateOptions")
        field_validation = _field_validation(request, "UpdateOptions")
        manager = _field_manager(request, "UpdateOptions")
        body = await negotiation.body_as_json(
            request.headers.get("Content-Type", ""), await request.read(), into
        )
        updated = await self._write(
            ref,
            info,
            body.json,
            dry_run=dry_run,
            field_validation=field_validation,
            field_manager=manager,
            decoding=_decoding(body),
        )
        return object_response(updated)

    async def _patch(
        self,
        request: web.Request,
        ref: registry_pb2.ResourceRef,
        info: paths.RequestInfo,
        api: APIResource,
    ) -> web.Response:
        """kube's patcher: the patch applied to the current object and written
        back at the resourceVersion it was read at, again on a conflict with a
        concurrent write unless the patch itself named a resourceVersion (as the
        store's GuaranteedUpdate would: each retry means another write landed)."""
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        # As kube, custom resources take no strategic merge patches: they have no
        # Go types to read merge keys from.
        accepted: tuple[str, ...] = patches.FOR_CUSTOM if api.custom else patches.SUPPORTED
        # kube also applies to a subresource (status, scale); strata does not yet,
        # and refuses it as kube refuses a patch type: go-restful's 415 for a
        # built-in route, the custom resource handler's for the rest.
        if not info.subresource:
            accepted += (patches.APPLY_PATCH,)
        if content_type not in accepted:
            if api.custom:
                raise negotiation.unsupported_body(accepted)
            raise patches.unsupported_media_type()
        patch = await request.read()
        dry_run = _dry_run(request.query.getall("dryRun", []), "PatchOptions")
        field_validation = _field_validation(request, "PatchOptions")
        force = request.query.get("force")
        if content_type == patches.APPLY_PATCH:
            manager = request.query.get("fieldManager", "")
            if not manager:
                cause = Cause(
                    reason="FieldValueRequired",
                    message="Required value: is required for apply patch",
                    field="fieldManager",
                )
                raise errors.invalid("PatchOptions", "", [cause], "meta.k8s.io")
            return await self._apply(
                ref,
                info,
                patch,
                manager,
                paths.truthy(force),
                dry_run,
                field_validation,
                apply.shapes_for(api.schema),
            )
        if force is not None:
            cause = Cause(
                reason="FieldValueForbidden",
                message="Forbidden: may not be specified for non-apply patch",
                field="force",
            )
            raise errors.invalid("PatchOptions", "", [cause], "meta.k8s.io")
        decoding = registry_pb2.Decoding(converted=True, patch="")
        if field_validation != "Ignore":
            decoding.strict_errors.extend(patches.strict_errors(content_type, patch))
        if field_validation == "Strict":
            decoding.patch = patches.quoted(content_type, patch)
        while True:
            current = await self._registry.Get(
                registry_pb2.GetRequest(resource=ref, name=info.name, subresource=info.subresource)
            )
            rules = patches.rules_for(api.schema)
            patched = orjson.loads(patches.apply(content_type, current.object, patch, rules))
            read_at = orjson.loads(current.object)["metadata"].get("resourceVersion")
            metadata = patched.setdefault("metadata", {})
            if not isinstance(metadata, dict):
                raise errors.bad_request("metadata must be an object")
            pinned = metadata.setdefault("resourceVersion", read_at) != read_at
            try:
                updated = await self._write(
                    ref,
                    info,
                    orjson.dumps(patched),
                    dry_run=dry_run,
                    field_validation=field_validation,
                    field_manager=_field_manager(request, "PatchOptions"),
                    decoding=decoding,
                )
            except grpc.aio.AioRpcError as e:
                status = status_from_rpc_error(e)
                if status.reason != "Conflict" or pinned:
                    raise status from None
                continue
            return object_response(updated)

    async def _apply(
        self,
        ref: registry_pb2.ResourceRef,
        info: paths.RequestInfo,
        patch: bytes,
        manager: str,
        force: bool,
        dry_run: bool,
        field_validation: str,
        shapes: ListShapes,
    ) -> web.Response:
        """Server-side apply: the configuration merged into the live object (or
        creating it) under manager's name, written back at the resourceVersion
        read, again after a concurrent write."""
        configuration = await negotiation.body_as_json(negotiation.YAML, patch)
        # kube's apply reads its configuration as YAML whatever it is.
        strict_errors = [f"error converting YAML to JSON: {e}" for e in configuration.strict_errors]
        if strict_errors and field_validation == "Strict":
            raise errors.bad_request(f"error strict decoding YAML: {strict_errors[0]}")
        decoding = registry_pb2.Decoding(strict_errors=strict_errors, converted=True)
        applied = apply.check_applied(orjson.loads(configuration.json), info.name)
        api_version = f"{ref.group}/{ref.version}" if ref.group else ref.version
        while True:
            try:
                current = await self._registry.Get(
                    registry_pb2.GetRequest(resource=ref, name=info.name)
                )
            except grpc.aio.AioRpcError as e:
                if status_from_rpc_error(e).reason != "NotFound":
                    raise
                live = None
            else:
                live = orjson.loads(current.object)
            merged = apply.apply(
                live,
                applied,
                manager=manager,
                force=force,
                api_version=api_version,
                shapes=shapes,
            )
            body = orjson.dumps(merged)
            try:
                if live is None:
                    created = await self._registry.Create(
                        registry_pb2.CreateRequest(
                            resource=ref,
                            body=body,
                            dry_run=dry_run,
                            field_validation=field_validation,
                            decoding=decoding,
                        )
                    )
                    return object_response(created, 201)
                updated = await self._write(
                    ref,
                    info,
                    body,
                    dry_run=dry_run,
                    field_validation=field_validation,
                    decoding=decoding,
                )
                return object_response(updated)
            except grpc.aio.AioRpcError as e:
                # Another write came between the read and this one: apply again.
                if status_from_rpc_error(e).reason not in ("Conflict", "AlreadyExists"):
                    raise
                continue

    @staticmethod
    def _require(api: APIResource, verb: str, info: paths.RequestInfo) -> None:
        if verb not in api.verbs:
            raise errors.method_not_allowed()

    @staticmethod
    def _rendering(request: web.Request) -> registry_pb2.Rendering:
        return registry_pb2.Rendering(
            as_table=request[OUTPUT].transform == negotiation.TABLE,
            include_object=request.query.get("includeObject", ""),
        )

    def _list_options(self, request: web.Request) -> registry_pb2.ListOptions:
        query = request.query
        limit = query.get("limit", "0") or "0"
        try:
            parsed_limit = int(limit)
        except ValueError:
            raise errors.bad_request(f"invalid limit: {limit!r} is not an integer") from None
        options = registry_pb2.ListOptions(
            label_selector=query.get("labelSelector", ""),
            field_selector=query.get("fieldSelector", ""),
            resource_version=query.get("resourceVersion", ""),
            resource_version_match=query.get("resourceVersionMatch", ""),
            limit=parsed_limit,
            allow_watch_bookmarks=paths.truthy(query.get("allowWatchBookmarks")),
            send_initial_events=paths.flag(query.get("sendInitialEvents")),
            rendering=self._rendering(request),
        )
        setattr(options, "continue", query.get("continue", ""))  # a Python keyword
        return options

    async def _get(
        self, request: web.Request, ref: registry_pb2.ResourceRef, name: str, subresource: str = ""
    ) -> web.Response:
        response = await self._registry.Get(
            registry_pb2.GetRequest(
                resource=ref,
                name=name,
                resource_version=request.query.get("resourceVersion", ""),
                rendering=self._rendering(request),
                subresource=subresource,
            )
        )
        return json_response(response.object)

    async def _list(
        self, request: web.Request, ref: registry_pb2.ResourceRef, api: APIResource
    ) -> web.Response:
        options = self._list_options(request)
        response = await self._registry.List(
            registry_pb2.ListRequest(resource=ref, options=options)
        )
        if options.rendering.as_table:
            return json_response(response.table)
        return self._list_body(ref, api, response)

    @staticmethod
    def _list_body(
        ref: registry_pb2.ResourceRef, api: APIResource, response: registry_pb2.ListResponse
    ) -> web.Response:
        """A <Kind>List of the response's items, written around their JSON."""
        api_version = f"{ref.group}/{ref.version}" if ref.group else ref.version
        list_meta: dict[str, Any] = {"resourceVersion": str(response.resource_version)}
        if continue_token := getattr(response, "continue"):
            list_meta["continue"] = continue_token
        if response.HasField("remaining_item_count"):
            list_meta["remainingItemCount"] = response.remaining_item_count
        head = orjson.dumps(
            {"kind": api.list_kind, "apiVersion": api_version, "metadata": list_meta}
        )
        body = head[:-1] + b',"items":[' + b",".join(response.items) + b"]}"
        return json_response(body)

    async def _watch(
        self, request: web.Request, ref: registry_pb2.ResourceRef
    ) -> web.StreamResponse:
        timeout_param = request.query.get("timeoutSeconds")
        if timeout_param is not None:
            try:
                timeout = float(int(timeout_param))
            except ValueError:
                raise errors.bad_request(f"invalid timeoutSeconds: {timeout_param!r}") from None
        else:
            timeout = MIN_REQUEST_TIMEOUT_SECONDS * (1 + random.random())
        options = self._list_options(request)
        # The cacher sends its last bookmark shortly before this ends.
        options.timeout_seconds = int(timeout)
        watch = self._watches.open(registry_pb2.WatchRequest(resource=ref, options=options))
        out = request.get(OUTPUT)
        if out is not None and out.transform == negotiation.PARTIAL:
            watch.transform = partial_event(out.version)
        try:
            await watch.wait_started()
            response = web.StreamResponse(status=200, headers={"Content-Type": JSON})
            response.enable_chunked_encoding()
            await response.prepare(request)
            if request.transport is None:  # the client has gone
                return response
            watch.attach(response, request.protocol, request.transport)
            try:
                async with asyncio.timeout(timeout):
                    await asyncio.shield(watch.finished)
            except TimeoutError:
                pass
            except asyncio.CancelledError:
                # close_watches ended the stream, or the client has gone: either
                # way the watch ends here, and the request with it.
                if not self._closing and request.transport is not None:
                    raise
                if (task := asyncio.current_task()) is not None:
                    task.uncancel()
        finally:
            watch.cancel()
        transport = request.transport
        if transport is None:  # the client has gone
            return response
        if watch.terminated:
            # Too slow to keep: drop the connection rather than wait on it.
            transport.close()
            return response
        await watch.drained()
        with contextlib.suppress(ConnectionError):  # the client left first
            await response.write_eof()
        return response

    @staticmethod
    async def _delete_options(request: web.Request) -> tuple[dict[str, Any], bool]:
        """The request's DeleteOptions (from its body) and whether it is a dry run
        (query parameters first, then what the body sets: kube's order)."""
        options: dict[str, Any] = {}
        if request.can_read_body:
            raw = await request.read()
            if raw.strip():
                body = await negotiation.body_as_json(
                    request.headers.get("Content-Type", ""), raw, kubeproto.DELETE_OPTIONS
                )
                try:
                    options = orjson.loads(body.json)
                except orjson.JSONDecodeError as e:
                    raise errors.bad_request(f"invalid DeleteOptions: {e}") from None
                if not isinstance(options, dict):
                    raise errors.bad_request("DeleteOptions must be a JSON object")
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
        return options, _dry_run([str(v) for v in dry_run_values], "DeleteOptions")

    @staticmethod
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

    async def _delete_collection(
        self, request: web.Request, ref: registry_pb2.ResourceRef, api: APIResource
    ) -> web.Response:
        options, dry_run = await self._delete_options(request)
        response = await self._registry.DeleteCollection(
            registry_pb2.DeleteCollectionRequest(
                resource=ref,
                options=self._list_options(request),
                dry_run=dry_run,
                **self._garbage_collection(options),
            )
        )
        return self._list_body(ref, api, response)

    async def _delete(
        self, request: web.Request, ref: registry_pb2.ResourceRef, name: str
    ) -> web.Response:
        options, dry_run = await self._delete_options(request)
        preconditions = options.get("preconditions") or {}
        response = await self._registry.Delete(
            registry_pb2.DeleteRequest(
                resource=ref,
                name=name,
                precondition_uid=str(preconditions.get("uid") or ""),
                precondition_resource_version=str(preconditions.get("resourceVersion") or ""),
                dry_run=dry_run,
                **self._garbage_collection(options),
            )
        )
        # kube's: 202 for a delete that only marked the object, when the client
        # asked for orphanDependents=false (its handler's !wasDeleted).
        accepted = response.pending and options.get("orphanDependents") is False
        return object_response(response, 202 if accepted else 200)
