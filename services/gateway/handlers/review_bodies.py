"""The body of a review (TokenReview, the access reviews): create-only kinds
the gateway answers itself, so it decodes their bodies itself, with kube's 400s
for one that is not the kind's object (the parse error in orjson's words: Go's
are the registry's own, which decodes every other body)."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from services.gateway import negotiation
from strata.api import errors

Obj = dict[str, Any]


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
    return obj
