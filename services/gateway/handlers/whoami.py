"""POST /apis/authentication.k8s.io/v1/selfsubjectreviews (`kubectl auth
whoami`): who the server takes the caller to be."""

from __future__ import annotations

import orjson
from aiohttp import web

from services.gateway.user import USER
from strata.api import errors


async def self_subject_review(request: web.Request) -> web.Response:
    """POST only: kube's route answers any other method 405."""
    if request.method != "POST":
        raise errors.method_not_allowed()
    body = {
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": request[USER].info()},
    }
    return web.Response(status=201, body=orjson.dumps(body), content_type="application/json")
