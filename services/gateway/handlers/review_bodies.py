"""The body of a review (TokenReview, the access reviews): create-only kinds
the gateway answers itself, so it decodes their bodies itself, with kube's 400s
for one that is not the kind's object (the parse error in orjson's words: Go's
are the registry's own, which decodes every other body) and for a field of
another JSON type than its Go field's (in Go's words: go_types)."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from services.gateway import negotiation
from services.gateway.handlers.go_types import GoType, Map, Slice, Struct, type_error
from strata.api import errors

Obj = dict[str, Any]

_STRINGS = "[]string"
# ObjectMeta's fields of plain JSON types (the times and the managed fields
# left out: Go's words for those are not an UnmarshalTypeError's).
_OBJECT_META = Struct(
    "v1.ObjectMeta",
    "ObjectMeta",
    {
        **dict.fromkeys(("name", "generateName", "namespace", "selfLink"), "string"),
        "uid": "types.UID",
        "resourceVersion": "string",
        "generation": "int64",
        "labels": Map("map[string]string", "string"),
        "annotations": Map("map[string]string", "string"),
        "finalizers": _STRINGS,
    },
)
_EXTRA = Map("map[string]v1.ExtraValue", Slice("v1.ExtraValue", "string"))


def _requirements(kind: str, operator: str) -> Slice:
    fields: dict[str, GoType] = {"key": "string", "operator": operator, "values": _STRINGS}
    return Slice(f"[]v1.{kind}", Struct(f"v1.{kind}", kind, fields))


def _selector(kind: str, requirement: str, operator: str) -> Struct:
    fields: dict[str, GoType] = {
        "rawSelector": "string",
        "requirements": _requirements(requirement, operator),
    }
    return Struct(f"v1.{kind}", kind, fields)


_RESOURCE_ATTRIBUTES = Struct(
    "v1.ResourceAttributes",
    "ResourceAttributes",
    {
        **dict.fromkeys(
            ("namespace", "verb", "group", "version", "resource", "subresource", "name"), "string"
        ),
        "fieldSelector": _selector(
            "FieldSelectorAttributes", "FieldSelectorRequirement", "selection.Operator"
        ),
        "labelSelector": _selector(
            "LabelSelectorAttributes", "LabelSelectorRequirement", "v1.LabelSelectorOperator"
        ),
    },
)
_ATTRIBUTES: dict[str, GoType] = {
    "resourceAttributes": _RESOURCE_ATTRIBUTES,
    "nonResourceAttributes": Struct(
        "v1.NonResourceAttributes", "NonResourceAttributes", {"path": "string", "verb": "string"}
    ),
}
_ACCESS_STATUS = Struct(
    "v1.SubjectAccessReviewStatus",
    "SubjectAccessReviewStatus",
    {"allowed": "bool", "denied": "bool", "reason": "string", "evaluationError": "string"},
)
_SUBJECT_SPEC = Struct(
    "v1.SubjectAccessReviewSpec",
    "SubjectAccessReviewSpec",
    {
        **_ATTRIBUTES,
        "user": "string",
        "groups": _STRINGS,
        "extra": _EXTRA,
        "uid": "string",
    },
)
_RULES_STATUS = Struct(
    "v1.SubjectRulesReviewStatus",
    "SubjectRulesReviewStatus",
    {
        "resourceRules": Slice(
            "[]v1.ResourceRule",
            Struct(
                "v1.ResourceRule",
                "ResourceRule",
                dict.fromkeys(("verbs", "apiGroups", "resources", "resourceNames"), _STRINGS),
            ),
        ),
        "nonResourceRules": Slice(
            "[]v1.NonResourceRule",
            Struct(
                "v1.NonResourceRule",
                "NonResourceRule",
                dict.fromkeys(("verbs", "nonResourceURLs"), _STRINGS),
            ),
        ),
        "incomplete": "bool",
        "evaluationError": "string",
    },
)
_TOKEN_STATUS = Struct(
    "v1.TokenReviewStatus",
    "TokenReviewStatus",
    {
        "authenticated": "bool",
        "user": Struct(
            "v1.UserInfo",
            "UserInfo",
            {"username": "string", "uid": "string", "groups": _STRINGS, "extra": _EXTRA},
        ),
        "audiences": _STRINGS,
        "error": "string",
    },
)
# Each review kind's spec and status.
_PARTS: dict[str, tuple[Struct, Struct]] = {
    "SubjectAccessReview": (_SUBJECT_SPEC, _ACCESS_STATUS),
    "LocalSubjectAccessReview": (_SUBJECT_SPEC, _ACCESS_STATUS),
    "SelfSubjectAccessReview": (
        Struct("v1.SelfSubjectAccessReviewSpec", "SelfSubjectAccessReviewSpec", _ATTRIBUTES),
        _ACCESS_STATUS,
    ),
    "SelfSubjectRulesReview": (
        Struct(
            "v1.SelfSubjectRulesReviewSpec", "SelfSubjectRulesReviewSpec", {"namespace": "string"}
        ),
        _RULES_STATUS,
    ),
    "TokenReview": (
        Struct("v1.TokenReviewSpec", "TokenReviewSpec", {"token": "string", "audiences": _STRINGS}),
        _TOKEN_STATUS,
    ),
}


def _kind_type(kind: str) -> Struct:
    spec, status = _PARTS[kind]
    fields: dict[str, GoType] = {"metadata": _OBJECT_META, "spec": spec, "status": status}
    return Struct(f"v1.{kind}", kind, fields)


async def review_body(request: web.Request, api_version: str, kind: str, internal: str) -> Obj:
    """The body (JSON, YAML or protobuf) as an object of api_version's kind;
    internal is the group kube converts it to ("authorization")."""
    content_type = request.headers.get("Content-Type", "")
    body = await negotiation.body_as_json(content_type, await request.read(), (api_version, kind))
    unrecognized = f"the object provided is unrecognized (must be of type {kind}): couldn't get"
    try:
        obj = orjson.loads(body.json)
    except orjson.JSONDecodeError as e:
        raise errors.bad_request(f"{unrecognized} version/kind; json parse error: {e}") from None
    if not isinstance(obj, dict):
        raise errors.bad_request(
            f"{unrecognized} version/kind; json parse error: "
            "json: cannot unmarshal into Go value of type struct"
        )
    given_version, given = obj.get("apiVersion") or api_version, obj.get("kind") or kind
    if (given_version, given) != (api_version, kind):
        version = str(given_version).rpartition("/")[2]
        raise errors.bad_request(
            f'{given} in version "{version}" cannot be handled as a {kind}: '
            f"converting ({version}.{given}) to ({internal}.{kind}): unknown conversion"
        )
    if (problem := type_error(obj, _kind_type(kind), "", "", body.json)) is not None:
        raise errors.undecodable(kind, api_version.rpartition("/")[2], problem)
    return obj
