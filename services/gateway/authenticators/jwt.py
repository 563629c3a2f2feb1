"""A JWT issuer of the structured authentication configuration (kube's
jwtAuthenticator over go-oidc's verifier), so that an organisation's identity
provider's tokens reach the API: a token whose iss is the issuer's url is
checked in go-oidc's order (audience, expiry, not-before with five minutes'
leeway, then the signature, against the keys keysets.py fetched), then by the
claim validation rules, and mapped to a user: the username, groups and uid
claims with their prefixes, and the token's jti as kube's credential id. A
token of another issuer is not this authenticator's (None); refusals are in
kube's words.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import jwt
import orjson

from services.gateway.authenticators import Authenticated, Rejected
from services.gateway.authenticators.config import Issuer, Mapping
from services.gateway.authenticators.keysets import KeySet
from services.gateway.authenticators.serviceaccounts import peek
from services.gateway.user import User, extra_of
from strata import serviceaccounts

Claims = dict[str, Any]
# go-oidc's allowance for clocks on not-before.
NBF_LEEWAY_SECONDS = 300
# The asymmetric algorithms kube's JWT authenticator accepts.
ALGORITHMS = ("RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512")
_GO_TYPES = {bool: "bool", int: "number", float: "number", str: "string", list: "array"}


def _go_type(value: Any) -> str:
    return "object" if isinstance(value, dict) else _GO_TYPES.get(type(value), "null")


def _go_time(seconds: float) -> str:
    """A time as Go's time.Time prints it in UTC."""
    moment = datetime.fromtimestamp(seconds, UTC)
    fraction = f"{seconds % 1:.9f}"[1:].rstrip("0").rstrip(".") if seconds % 1 else ""
    return moment.strftime("%Y-%m-%d %H:%M:%S") + fraction + " +0000 UTC"


def _quoted(values: list[str] | tuple[str, ...]) -> str:
    return "[" + " ".join(orjson.dumps(v).decode() for v in values) + "]"


class JWTAuthenticator:
    def __init__(
        self, issuer: Issuer, keys: KeySet, clock: Callable[[], float] = time.time
    ) -> None:
        self.issuer = issuer
        self.keys = keys
        self._clock = clock

    async def authenticate_token(
        self, token: str, audiences: tuple[str, ...]
    ) -> Authenticated | None:
        peeked = peek(token)
        if peeked is None or peeked[1].get("iss") != self.issuer.url:
            return None
        header, claims = peeked
        if not self.keys.initialized:
            raise Rejected(f'oidc: authenticator for issuer "{self.issuer.url}" is not initialized')
        self._check_claims(claims)
        await self._check_signature(token, str(header.get("kid") or ""))
        for rule in self.issuer.rules:
            if rule.claim not in claims:
                raise Rejected(f"oidc: required claim {rule.claim} not present in ID token")
            value = self._string(claims[rule.claim], f"oidc: parse claim {rule.claim}")
            if value != rule.required_value:
                raise Rejected(
                    f"oidc: required claim {rule.claim} value does not match. Got = {value}, "
                    f"want = {rule.required_value}"
                )
        return Authenticated(self._user(claims))

    @staticmethod
    def _string(value: Any, what: str) -> str:
        if not isinstance(value, str):
            raise Rejected(
                f"{what}: json: cannot unmarshal {_go_type(value)} into Go value of type string"
            )
        return value

    def _check_claims(self, claims: Claims) -> None:
        """go-oidc's checks before the signature: the claims' types, the
        audience, the expiry and not-before."""
        for name in ("iss", "sub"):
            if name in claims and not isinstance(claims[name], str):
                raise Rejected(
                    "oidc: verify token: oidc: failed to unmarshal claims: json: cannot "
                    f"unmarshal {_go_type(claims[name])} into Go struct field idToken.{name} "
                    "of type string"
                )
        aud = claims.get("aud")
        given = [aud] if isinstance(aud, str) else [str(a) for a in aud or []]
        wanted = self.issuer.audiences
        if not set(given) & set(wanted):
            expected = orjson.dumps(wanted[0]).decode() if len(wanted) == 1 else _quoted(wanted)
            word = "audience" if len(wanted) == 1 else "audience in"
            raise Rejected(
                f"oidc: verify token: oidc: expected {word} {expected} got {_quoted(given)}"
            )
        now = self._clock()
        exp = claims.get("exp", 0) if "exp" in claims else 0
        if not isinstance(exp, int | float) or isinstance(exp, bool):
            raise Rejected(
                "oidc: verify token: oidc: failed to unmarshal claims: strconv.ParseFloat: "
                'parsing "": invalid syntax'
            )
        if exp < now:
            expiry = _go_time(exp) if exp else "0001-01-01 00:00:00 +0000 UTC"
            raise Rejected(f"oidc: verify token: oidc: token is expired (Token Expiry: {expiry})")
        nbf = claims.get("nbf")
        if isinstance(nbf, int | float) and now + NBF_LEEWAY_SECONDS < nbf:
            raise Rejected(
                f"oidc: verify token: oidc: current time {_go_time(now)} before the nbf (not "
                f"before) time: {_go_time(nbf)}"
            )

    async def _check_signature(self, token: str, kid: str) -> None:
        keys = self.keys.keys_for(kid) or await self.keys.refetch_for(kid)
        for key in keys:
            algorithm = key.algorithm_name
            if algorithm not in ALGORITHMS:
                continue
            try:
                jwt.api_jws.decode_complete(token, key, algorithms=[algorithm])
            except jwt.InvalidTokenError:
                continue
            return
        raise Rejected(
            "oidc: verify token: failed to verify signature: failed to verify id token signature"
        )

    def _claim(self, claims: Claims, mapping: Mapping, what: str) -> str:
        if mapping.claim not in claims:
            raise Rejected(f'oidc: parse {what} "{mapping.claim}": claim not present')
        return self._string(claims[mapping.claim], f'oidc: parse {what} "{mapping.claim}"')

    def _user(self, claims: Claims) -> User:
        username_mapping = self.issuer.username
        name = self._claim(claims, username_mapping, "username claims")
        if username_mapping.claim == "email" and "email_verified" in claims:
            verified = claims["email_verified"]
            if not isinstance(verified, bool):
                raise Rejected(
                    "oidc: parse 'email_verified' claim: json: cannot unmarshal "
                    f"{_go_type(verified)} into Go value of type bool"
                )
            if not verified:
                raise Rejected("oidc: email not verified")
        groups: list[str] = []
        if (mapping := self.issuer.groups) is not None and mapping.claim in claims:
            value = claims[mapping.claim]
            if isinstance(value, list) and all(isinstance(g, str) for g in value):
                groups = [mapping.prefix + g for g in value]
            else:
                one = self._string(value, f'oidc: parse groups claim "{mapping.claim}"')
                groups = [mapping.prefix + one]
        uid = ""
        if self.issuer.uid is not None:
            uid = self._claim(claims, self.issuer.uid, "uid claim")
        jti = claims.get("jti")
        extra = (
            {serviceaccounts.CREDENTIAL_ID: [f"JTI={jti}"]} if isinstance(jti, str) and jti else {}
        )
        return User(username_mapping.prefix + name, uid, tuple(groups), extra_of(extra))
