"""authorization.k8s.io/v1's review APIs, served by the gateway as kube serves
them: create-only (POST; any other method 405), answered at once and never
stored. SubjectAccessReview (may this user do this?),
LocalSubjectAccessReview (the same, in the path's namespace),
SelfSubjectAccessReview (may I?, what `kubectl auth can-i` asks) and
SelfSubjectRulesReview (what may I do here?, `kubectl auth can-i --list`).

Each body is read and checked as kube's REST storage for the kind checks it
(pkg/apis/authorization/validation), and echoed with its status, which the
gateway's authorizer answers through the Reviewer the app hands in (the
handlers import no authorizer). The group's discovery comes from RESOURCES,
which the app gives the catalog."""

from __future__ import annotations

from typing import Any, Protocol

import orjson
from aiohttp import web

from services.gateway.catalog import APIResource
from services.gateway.handlers import query
from services.gateway.handlers.review_bodies import review_body
from services.gateway.responses import json_response
from services.gateway.user import User, extra_of, of
from strata.api import errors, managed_fields
from strata.api.causes import invalid_value
from strata.api.errors import Cause
from strata.api.key_order import OBJECT_META

Obj = dict[str, Any]
GROUP = "authorization.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
PREFIX = f"/apis/{API_VERSION}"


class Reviewer(Protocol):
    """What the gateway's authorizer answers (services/gateway/authorizers/reviews.py)."""

    async def access(self, user: User, spec: Obj) -> Obj: ...

    def rules(self, user: User, namespace: str) -> Obj: ...


def _resource(name: str, kind: str, namespaced: bool = False) -> APIResource:
    return APIResource(
        group=GROUP,
        version=VERSION,
        name=name,
        singular_name=name[:-1],
        kind=kind,
        namespaced=namespaced,
        verbs=["create"],
    )


RESOURCES = (
    _resource("localsubjectaccessreviews", "LocalSubjectAccessReview", namespaced=True),
    _resource("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
    _resource("selfsubjectrulesreviews", "SelfSubjectRulesReview"),
    _resource("subjectaccessreviews", "SubjectAccessReview"),
)

# The spec's fields in the order of kube's Go structs (each omitted when empty).
_RESOURCE_ATTRIBUTES = (
    *("namespace", "verb", "group", "version", "resource", "subresource"),
    *("name", "fieldSelector", "labelSelector"),
)
_SUBJECT = ("user", "groups", "extra", "uid")


async def _body(request: web.Request, kind: str) -> Obj:
    return await review_body(request, API_VERSION, kind, "authorization")


def _spec(given: Any, subject: bool) -> Obj:
    """The spec kube decodes (its known fields, in its order, empty ones left out)."""
    given = given if isinstance(given, dict) else {}
    spec: Obj = {}
    attributes = given.get("resourceAttributes")
    if isinstance(attributes, dict):
        spec["resourceAttributes"] = {
            k: attributes[k] for k in _RESOURCE_ATTRIBUTES if attributes.get(k)
        }
    other = given.get("nonResourceAttributes")
    if isinstance(other, dict):
        spec["nonResourceAttributes"] = {k: other[k] for k in ("path", "verb") if other.get(k)}
    if subject:
        spec.update((k, given[k]) for k in _SUBJECT if given.get(k))
    return spec


def _spec_causes(spec: Obj, subject: bool) -> list[Cause]:
    """kube's ValidateSubjectAccessReviewSpec (and the self kind's, without a subject)."""
    causes = []
    attributes, other = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if attributes is not None and other is not None:
        detail = "cannot be specified in combination with resourceAttributes"
        causes.append(invalid_value("spec.nonResourceAttributes", _go_struct(other), detail))
    if attributes is None and other is None:
        detail = "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        causes.append(invalid_value("spec.resourceAttributes", None, detail))
    if subject and not spec.get("user") and not spec.get("groups"):
        detail = "at least one of user or group must be specified"
        causes.append(invalid_value("spec.user", "", detail))
    return causes


def _go_struct(attributes: Obj) -> Obj:
    """NonResourceAttributes as Go prints the internal struct (no JSON names)."""
    return {"Path": attributes.get("path", ""), "Verb": attributes.get("verb", "")}


def _metadata_cause(metadata: Obj, detail: str) -> Cause:
    return invalid_value("metadata", {k: metadata[k] for k in OBJECT_META if k in metadata}, detail)


def _echo(request: web.Request, kind: str, metadata: Obj, spec: Obj) -> Obj:
    """The review as kube's create handler has it: its fields' manager recorded."""
    # The spec's fields (the spec itself is not one: a struct, never null); a
    # pointer struct or map that is set is a field too (FieldsV1's ".").
    paths = {p for p in managed_fields.leaves({"spec": spec}) if len(p) > 1}
    paths |= {("spec", k) for k in ("resourceAttributes", "nonResourceAttributes", "extra")}
    paths = {p for p in paths if p[1] in spec}
    if paths:  # a manager of no fields is no entry
        manager = query.field_manager(request, "CreateOptions")
        entry = managed_fields.entry(manager, "Update", API_VERSION, paths)
        metadata = {**metadata, "managedFields": [entry]}
    return {"kind": kind, "apiVersion": API_VERSION, "metadata": metadata, "spec": spec}


def _not_empty(metadata: Obj, review: Obj) -> Cause:
    return _metadata_cause({**metadata, **review["metadata"]}, "must be empty")


def _invalid(causes: list[Cause]) -> errors.StatusError:
    return errors.invalid("", "", causes, GROUP)


class Reviews:
    def __init__(self, reviewer: Reviewer) -> None:
        self._reviewer = reviewer

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_route("*", f"{PREFIX}/subjectaccessreviews", self.subject_access)
        router.add_route("*", f"{PREFIX}/selfsubjectaccessreviews", self.self_subject_access)
        router.add_route("*", f"{PREFIX}/selfsubjectrulesreviews", self.self_subject_rules)
        router.add_route(
            "*", f"{PREFIX}/namespaces/{{namespace}}/localsubjectaccessreviews", self.local_access
        )

    async def _answer(self, review: Obj, user: User) -> web.Response:
        review["status"] = await self._reviewer.access(user, review["spec"])
        return json_response(orjson.dumps(review), 201)

    async def subject_access(self, request: web.Request) -> web.Response:
        kind = "SubjectAccessReview"
        if request.method != "POST":
            raise errors.method_not_allowed()
        obj = await _body(request, kind)
        spec = _spec(obj.get("spec"), subject=True)
        review = _echo(request, kind, {}, spec)
        causes = _spec_causes(spec, subject=True)
        if obj.get("metadata"):
            causes.append(_not_empty(obj["metadata"], review))
        if causes:
            raise _invalid(causes)
        return await self._answer(review, _subject(spec))

    async def local_access(self, request: web.Request) -> web.Response:
        kind = "LocalSubjectAccessReview"
        if request.method != "POST":
            raise errors.method_not_allowed()
        namespace = request.match_info["namespace"]
        obj = await _body(request, kind)
        metadata = dict(obj.get("metadata") or {})
        if metadata.get("namespace", namespace) != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        spec = _spec(obj.get("spec"), subject=True)
        review = _echo(request, kind, {"namespace": namespace}, spec)
        causes = _spec_causes(spec, subject=True)
        if set(metadata) - {"namespace", "managedFields"}:
            detail = "must be empty except for namespace"
            causes.append(_metadata_cause({**metadata, **review["metadata"]}, detail))
        attributes = spec.get("resourceAttributes")
        if attributes is not None and attributes.get("namespace", "") != namespace:
            causes.append(
                invalid_value(
                    "spec.resourceAttributes.namespace",
                    attributes.get("namespace", ""),
                    "must match metadata.namespace",
                )
            )
        if spec.get("nonResourceAttributes") is not None:
            causes.append(
                invalid_value(
                    "spec.nonResourceAttributes",
                    _go_struct(spec["nonResourceAttributes"]),
                    "disallowed on this kind of request",
                )
            )
        if causes:
            raise _invalid(causes)
        return await self._answer(review, _subject(spec))

    async def self_subject_access(self, request: web.Request) -> web.Response:
        kind = "SelfSubjectAccessReview"
        if request.method != "POST":
            raise errors.method_not_allowed()
        obj = await _body(request, kind)
        spec = _spec(obj.get("spec"), subject=False)
        review = _echo(request, kind, {}, spec)
        causes = _spec_causes(spec, subject=False)
        if obj.get("metadata"):
            causes.append(_not_empty(obj["metadata"], review))
        if causes:
            raise _invalid(causes)
        return await self._answer(review, of(request))

    async def self_subject_rules(self, request: web.Request) -> web.Response:
        kind = "SelfSubjectRulesReview"
        if request.method != "POST":
            raise errors.method_not_allowed()
        obj = await _body(request, kind)
        spec = obj.get("spec")
        namespace = spec.get("namespace") if isinstance(spec, dict) else None
        if not namespace:
            raise errors.bad_request("no namespace on request")
        review = {
            "kind": kind,
            "apiVersion": API_VERSION,
            "metadata": {},
            "spec": {},
            "status": self._reviewer.rules(of(request), str(namespace)),
        }
        return json_response(orjson.dumps(review), 201)


def _subject(spec: Obj) -> User:
    """The user a SubjectAccessReview asks about (its groups as given)."""
    groups = tuple(map(str, spec.get("groups") or []))
    extra = spec.get("extra") if isinstance(spec.get("extra"), dict) else {}
    given = {str(k): [str(v) for v in values or []] for k, values in (extra or {}).items()}
    return User(str(spec.get("user") or ""), str(spec.get("uid") or ""), groups, extra_of(given))
