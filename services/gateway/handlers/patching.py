"""PATCH: the patch type and options checked, the patch body's own strict
decoding errors found, and the patch handed to the registry, which applies it
to the object as it reads it inside its one conflict loop (kube's patcher
within GuaranteedUpdate; services/registry/generic/patching/). Server-side apply's
configuration is read here from YAML, as kube reads it whatever it is.

A patched object exists only inside that loop, so the gateway's admission
plugins (services/gateway/admission/) see no patch: admitting a patch, like an
update against the object it replaces, needs a seam in the registry's loop."""

from __future__ import annotations

from aiohttp import web

from services.gateway import negotiation, patches, paths
from services.gateway.catalog import APIResource
from services.gateway.handlers import query
from services.gateway.handlers.call import Call
from services.gateway.responses import object_response
from strata.api import errors, patch_types
from strata.api.errors import Cause
from strata.proto.registry.v1 import registry_pb2


def _check_type(content_type: str, api: APIResource, info: paths.RequestInfo) -> None:
    """A patch type the resource takes, or kube's refusal."""
    accepted: tuple[str, ...] = patch_types.FOR_CUSTOM if api.custom else patch_types.SUPPORTED
    # kube also applies to a subresource (status, scale); strata does not yet,
    # and refuses it as kube refuses a patch type: go-restful's 415 for a
    # built-in route, the custom resource handler's for the rest.
    if not info.subresource:
        accepted += (patch_types.APPLY_PATCH,)
    if content_type not in accepted:
        if api.custom:
            raise negotiation.unsupported_body(accepted)
        raise patches.unsupported_media_type()


def _invalid_option(reason: str, message: str, field: str) -> errors.StatusError:
    cause = Cause(reason=reason, message=message, field=field)
    return errors.invalid("PatchOptions", "", [cause], "meta.k8s.io")


async def patch(call: Call) -> web.Response:
    """The patch sent to the registry with what kube's strict decoding said of it."""
    request = call.request
    content_type = patches.patch_media(request.headers.get("Content-Type", ""))
    _check_type(content_type, call.api, call.info)
    body = await request.read()
    dry_run = query.dry_run(request.query.getall("dryRun", []), "PatchOptions")
    field_validation = query.field_validation(request, "PatchOptions")
    force = request.query.get("force")
    if content_type == patch_types.APPLY_PATCH:
        manager = request.query.get("fieldManager", "")
        if not manager:
            raise _invalid_option(
                "FieldValueRequired", "Required value: is required for apply patch", "fieldManager"
            )
        configuration = await negotiation.body_as_json(negotiation.YAML, body)
        strict_errors = [f"error converting YAML to JSON: {e}" for e in configuration.strict_errors]
        if strict_errors and field_validation == "Strict":
            raise errors.bad_request(f"error strict decoding YAML: {strict_errors[0]}")
        decoding = registry_pb2.Decoding(strict_errors=strict_errors, converted=True)
        sent = registry_pb2.Patch(
            type=content_type, body=configuration.json, force=paths.truthy(force)
        )
    else:
        if force is not None:
            raise _invalid_option(
                "FieldValueForbidden",
                "Forbidden: may not be specified for non-apply patch",
                "force",
            )
        manager = query.field_manager(request, "PatchOptions")
        decoding = registry_pb2.Decoding(converted=True, patch="")
        if field_validation != "Ignore":
            decoding.strict_errors.extend(patches.strict_errors(content_type, body))
        if field_validation == "Strict":
            decoding.patch = patches.quoted(content_type, body)
        sent = registry_pb2.Patch(type=content_type, body=body)
    answer: registry_pb2.ObjectResponse = await call.update(
        registry_pb2.UpdateRequest(
            resource=call.ref,
            name=call.info.name,
            patch=sent,
            dry_run=dry_run,
            subresource=call.info.subresource,
            field_validation=field_validation,
            field_manager=manager,
            decoding=decoding,
        )
    )
    return object_response(answer, 201 if answer.created else 200)
