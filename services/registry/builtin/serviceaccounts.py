"""The TokenRequest subresource of ServiceAccounts
(POST serviceaccounts/<name>/token, what `kubectl create token` sends): a
JWT naming the account, signed with the registry's service-account key, as
kube's TokenREST makes it, and the Signer the token controller's legacy tokens
come from too.

Tokens are minted here, where the objects are: the account is read (and the
Secret a token is bound to) at the moment of signing, so the token carries the
uids it was made for, and the private key stays in the registry (the gateway
verifies with the public half). kube's order of checks is kept: the name and
namespace the body gives, the account, the request's own rules, then the
bound object.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from services.registry.builtin.secrets import ServiceAccountStrategy
from services.registry.generic import warnings
from services.registry.generic.bodies import Scheme, decode_body
from services.registry.generic.declarations import Resource
from services.registry.generic.namespace_lifecycle import Namespaces, require_namespace
from services.registry.generic.options import Rendering
from services.registry.generic.store import Store
from strata import serviceaccounts
from strata.api import errors, managed_fields, meta
from strata.api.causes import invalid_value
from strata.storage import Storage

Obj = dict[str, Any]
GROUP, VERSION, KIND = "authentication.k8s.io", "v1", "TokenRequest"
SUBRESOURCE = "token"
# (group, resource, subresource) the registry serves TokenRequests at.
TOKEN_SUBRESOURCE = ("", "serviceaccounts", SUBRESOURCE)
# kube's defaulting of spec.expirationSeconds, and ValidateTokenRequest's bounds.
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
MAX_EXPIRATION_SECONDS = 1 << 32
# The kinds of authentication.k8s.io/v1 kube's scheme holds (what a wrong
# kind's 400 names), and its internal package.
AUTHENTICATION_KINDS = frozenset({"TokenRequest", "TokenReview", "SelfSubjectReview"})

# The kind a TokenRequest body decodes into (its strategy is never run: the
# subresource is no Store of its own).
TOKEN_REQUESTS = Resource(
    group=GROUP,
    version=VERSION,
    name="serviceaccounts",
    singular="",
    kind=KIND,
    namespaced=True,
    strategy=ServiceAccountStrategy(),
)
_KNOWN = {
    "": {"apiVersion", "kind", "metadata", "spec", "status"},
    "spec": {"audiences", "expirationSeconds", "boundObjectRef"},
    "spec.boundObjectRef": {"kind", "apiVersion", "name", "uid"},
    "status": {"token", "expirationTimestamp"},
}


@dataclass(frozen=True, kw_only=True)
class Signer:
    """What signs service-account tokens: the key, the issuer (kube's first
    --service-account-issuer), the API audiences (a request's default), and
    the longest a token may live (0: no bound)."""

    key: serviceaccounts.PrivateKey
    issuer: str
    audiences: tuple[str, ...]
    max_expiration_seconds: int = 0

    def legacy_token(self, namespace: str, account: tuple[str, str], secret: str) -> str:
        return serviceaccounts.sign(
            serviceaccounts.legacy_claims(namespace, account, secret), self.key
        )


def scheme_with_authentication(scheme: Scheme) -> Scheme:
    """scheme with authentication.k8s.io/v1's kinds (a wrong kind's 400 names them)."""
    kinds = {**scheme.kinds, f"{GROUP}/{VERSION}": AUTHENTICATION_KINDS}
    return Scheme(kinds=kinds, internal={**scheme.internal, GROUP: "authentication"})


def _unknown_fields(obj: Obj) -> list[str]:
    """The paths of fields a TokenRequest does not have (metadata is ObjectMeta's)."""
    found: list[str] = []
    for where, known in _KNOWN.items():
        node: Any = obj
        for part in where.split(".") if where else ():
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            found += [f"{where}.{k}" if where else k for k in node if k not in known]
    return found


def _fields_set(obj: Obj, spec: Obj) -> set[managed_fields.Path]:
    """The fields kube's managedFields entry claims: what the body set of spec
    and status, and expirationSeconds, which kube's defaulting sets before."""
    sent = obj.get("spec") or {}
    known = _KNOWN["spec"]
    given = {"spec": {k: v for k, v in sent.items() if k in known and v not in (None, [])}}
    given["spec"]["expirationSeconds"] = spec["expirationSeconds"]
    if isinstance(ref := given["spec"].get("boundObjectRef"), dict):
        bound = _KNOWN["spec.boundObjectRef"]
        given["spec"]["boundObjectRef"] = {k: v for k, v in ref.items() if k in bound and v}
    fields = managed_fields.leaves(given)
    status = obj.get("status") or {}
    fields |= {("status", k) for k in ("token", "expirationTimestamp") if status.get(k)}
    return fields


class TokenRequests:
    """serviceaccounts/<name>/token: create only."""

    def __init__(
        self,
        signer: Signer,
        accounts: Store,
        secrets: Store,
        *,
        storage: Storage,
        namespaces: Namespaces,
        scheme: Scheme,
    ) -> None:
        self._signer = signer
        self._accounts = accounts
        self._secrets = secrets
        self._storage = storage
        self._namespaces = namespaces
        self._scheme = scheme_with_authentication(scheme)

    async def create(
        self, namespace: str, name: str, body: bytes, *, dry_run: bool, field_manager: str
    ) -> bytes:
        """The TokenRequest answered (a dry run is answered a token too, as kube's)."""
        obj = decode_body(body, TOKEN_REQUESTS, self._scheme)
        warnings.undecoded_fields(KIND, VERSION, body, _unknown_fields(obj), typed=True)
        given = obj["metadata"]
        if given.get("namespace") not in (None, "", namespace):
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
        if given.get("name") not in (None, "", name):
            cause = invalid_value(
                "metadata.name", given["name"], "must match the service account name if specified"
            )
            raise errors.invalid(KIND, name, [cause], GROUP)
        await require_namespace(self._storage, self._namespaces, TOKEN_REQUESTS, namespace, name)
        account = orjson.loads(await self._accounts.get(namespace, name, "", Rendering()))
        spec = self._spec(obj.get("spec") or {})
        secret = await self._bound_secret(namespace, spec.get("boundObjectRef"))
        return self._answer(obj, spec, account, secret, field_manager)

    def _spec(self, given: Obj) -> Obj:
        """The spec defaulted and checked (kube's ValidateTokenRequest), then
        shortened to the longest expiration allowed, with kube's warning."""
        seconds = given.get("expirationSeconds")
        seconds = DEFAULT_EXPIRATION_SECONDS if seconds is None else seconds
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise errors.undecodable(KIND, VERSION, "spec.expirationSeconds must be an integer")
        if seconds < MIN_EXPIRATION_SECONDS:
            detail = "may not specify a duration less than 10 minutes"
        elif seconds > MAX_EXPIRATION_SECONDS:
            detail = "may not specify a duration larger than 2^32 seconds"
        else:
            detail = ""
        if detail:
            cause = invalid_value("spec.expirationSeconds", seconds, detail)
            raise errors.invalid(KIND, "", [cause], GROUP)
        longest = self._signer.max_expiration_seconds
        if longest and seconds > longest:
            warnings.warn(
                f"requested expiration of {seconds} seconds shortened to {longest} seconds"
            )
            seconds = longest
        return {
            "audiences": list(given.get("audiences") or self._signer.audiences),
            "expirationSeconds": seconds,
            "boundObjectRef": given.get("boundObjectRef"),
        }

    async def _bound_secret(self, namespace: str, ref: Obj | None) -> tuple[str, str] | None:
        """(name, uid) of the Secret the token is bound to; kube's refusals of
        any other object (strata serves no Pods or Nodes: they are not found)."""
        if ref is None:
            return None
        kind, api_version = str(ref.get("kind") or ""), str(ref.get("apiVersion") or "")
        group, _, version = api_version.rpartition("/")
        name = str(ref.get("name") or "")
        if group or kind not in ("Secret", "Pod", "Node"):
            raise errors.bad_request(
                f"cannot bind token to object of type {group}/{version}, Kind={kind}"
            )
        if not name:
            raise errors.bad_request("Name parameter required.")
        if kind != "Secret":
            raise errors.not_found(kind.lower() + "s", name)
        secret = orjson.loads(await self._secrets.get(namespace, name, "", Rendering()))
        uid = str(secret["metadata"].get("uid", ""))
        if ref.get("uid") and ref["uid"] != uid:
            raise errors.conflict(
                "Secret",
                name,
                f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                "in record. The object might have been deleted and then recreated",
            )
        return name, uid

    def _answer(
        self, obj: Obj, spec: Obj, account: Obj, secret: tuple[str, str] | None, manager: str
    ) -> bytes:
        meta_of = account["metadata"]
        namespace, name, uid = meta_of["namespace"], meta_of["name"], meta_of.get("uid", "")
        now = meta.now_rfc3339()
        issued = int(meta.parse_rfc3339(now).timestamp())
        claims = serviceaccounts.bound_claims(
            issuer=self._signer.issuer,
            audiences=spec["audiences"],
            namespace=namespace,
            account=(name, uid),
            secret=secret,
            issued_at=issued,
            expiration_seconds=spec["expirationSeconds"],
            jti=str(uuid.uuid4()),
        )
        entry = managed_fields.entry(
            manager, "Update", f"{GROUP}/{VERSION}", _fields_set(obj, spec)
        )
        entry["subresource"] = SUBRESOURCE
        expires = issued + spec["expirationSeconds"]
        answer = {
            "kind": KIND,
            "apiVersion": f"{GROUP}/{VERSION}",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": uid,
                "creationTimestamp": now,
                **({"managedFields": [entry]} if manager else {}),
            },
            "spec": spec,
            "status": {
                "token": serviceaccounts.sign(claims, self._signer.key),
                "expirationTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires)),
            },
        }
        return orjson.dumps(answer)
