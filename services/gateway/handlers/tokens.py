"""The token APIs the gateway serves, as kube serves them:

- POST serviceaccounts/<name>/token (a TokenRequest, `kubectl create token`):
  the create handler's (services/gateway/handlers/writes.py), which reads the
  body as a TokenRequest and hands it to the registry, which mints the token
  where the account is;
- POST /apis/authentication.k8s.io/v1/tokenreviews: who a token is, as the
  gateway's own authenticators say (create-only, answered at once, stored
  nowhere), so that other servers can ask;
- GET /.well-known/openid-configuration and /openid/v1/jwks: the
  service-account issuer's OIDC discovery document and keys, so that anyone
  can verify strata's tokens with a standard JWT library.

The token authenticators are the app's to hand in (TokenReviewer); the
handlers import none of the chain."""

from __future__ import annotations

from typing import Any, Protocol

import orjson
from aiohttp import web

from services.gateway.authenticators.tokens import Review
from services.gateway.catalog import APIResource
from services.gateway.handlers import query
from services.gateway.handlers.review_bodies import review_body
from services.gateway.responses import json_response
from strata import serviceaccounts
from strata.api import errors, managed_fields
from strata.api.key_order import OBJECT_META

Obj = dict[str, Any]
GROUP, VERSION = "authentication.k8s.io", "v1"
API_VERSION = f"{GROUP}/{VERSION}"
TOKEN_REVIEW = "TokenReview"
# Where kube serves its service-account issuer's discovery (pkg/serviceaccount).
OPENID_CONFIGURATION = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"
# kube's Cache-Control for both: the keys' cache age.
CACHE_CONTROL = "public, max-age=3600"

# authentication.k8s.io/v1's discovery, which the app gives the catalog.
RESOURCES = (
    APIResource(
        group=GROUP,
        version=VERSION,
        name="tokenreviews",
        singular_name="tokenreview",
        kind=TOKEN_REVIEW,
        namespaced=False,
        verbs=["create"],
    ),
)


class TokenReviewer(Protocol):
    """Who a token is (services/gateway/authenticators/tokens.py's Tokens)."""

    async def review(self, token: str, audiences: tuple[str, ...] = ()) -> Review: ...


def _field(obj: Obj, name: str) -> Obj:
    """obj's field name when it is an object (kube would not have decoded
    another), else an empty one."""
    found = obj.get(name)
    return found if isinstance(found, dict) else {}


class TokenReviews:
    def __init__(self, reviewer: TokenReviewer) -> None:
        self._reviewer = reviewer

    async def create(self, request: web.Request) -> web.Response:
        """POST only: kube's route answers any other method 405."""
        if request.method != "POST":
            raise errors.method_not_allowed()
        query.dry_run(request.query.getall("dryRun", []), "CreateOptions")
        query.field_validation(request, "CreateOptions")
        obj = await review_body(request, API_VERSION, TOKEN_REVIEW, "authentication")
        given = _field(obj, "spec")
        spec: Obj = {"token": str(given.get("token") or "")}
        if given.get("audiences"):
            spec["audiences"] = [str(a) for a in given["audiences"]]
        if not spec["token"]:
            raise errors.bad_request("token is required for TokenReview in authentication")
        fields = managed_fields.leaves({"spec": spec})
        given_status = _field(obj, "status")
        fields |= {("status", k) for k, v in given_status.items() if v not in (None, "", [], {})}
        entry = managed_fields.entry(
            query.field_manager(request, "CreateOptions"), "Update", API_VERSION, fields
        )
        given_metadata = _field(obj, "metadata")
        metadata = {k: given_metadata[k] for k in OBJECT_META if given_metadata.get(k)}
        metadata.pop("managedFields", None)
        reviewed = await self._reviewer.review(spec["token"], tuple(spec.get("audiences", ())))
        status: Obj = {}
        if reviewed.user is not None:
            status = {"authenticated": True, "user": reviewed.user.info()}
            status["audiences"] = list(reviewed.audiences)
        else:
            status = {"user": {}, "error": reviewed.error}
        review = {
            "kind": TOKEN_REVIEW,
            "apiVersion": API_VERSION,
            "metadata": {**metadata, "managedFields": [entry]},
            "spec": spec,
            "status": status,
        }
        return json_response(orjson.dumps(review), 201)


class IssuerDiscovery:
    """kube's OIDC discovery of its service-account issuer: the documents are
    made once, from the issuer, the URI the keys are served at and the keys."""

    def __init__(self, issuer: str, jwks_uri: str, keys: list[serviceaccounts.PublicKey]) -> None:
        jwks = [serviceaccounts.jwk(key) for key in keys]
        configuration = {
            "issuer": issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": sorted({k["alg"] for k in jwks}),
        }
        self._configuration = orjson.dumps(configuration)
        self._jwks = orjson.dumps({"keys": jwks})

    @staticmethod
    def _answer(body: bytes, content_type: str) -> web.Response:
        response = web.Response(body=body, content_type=content_type)
        response.headers["Cache-Control"] = CACHE_CONTROL
        return response

    async def configuration(self, _: web.Request) -> web.Response:
        return self._answer(self._configuration, "application/json")

    async def jwks(self, _: web.Request) -> web.Response:
        return self._answer(self._jwks, "application/jwk-set+json")

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get(OPENID_CONFIGURATION, self.configuration)
        router.add_get(JWKS_PATH, self.jwks)
