"""Service-account tokens, checked as kube-apiserver checks them on every
request (k8s.io/kubernetes pkg/serviceaccount: jwt.go's authenticator, with
claims.go's validator for TokenRequest tokens and legacy.go's for the legacy
token Secrets' tokens): the issuer, the signature (against the public keys of
--service-account-key-file, picked by the token's kid), the audiences, the
token's times (a minute's leeway), and that the account (the same uid) and the
Secret the token is bound to, or for a legacy token the Secret holding it,
still exist, as the gateway's informers keep them (accounts.py).

A signature once verified is remembered for the token (its claims are only
read back), so a client using its token again pays for the lookups alone.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import jwt
import orjson

from services.gateway.authenticators import Authenticated, Rejected
from services.gateway.authenticators.accounts import AccountLookup
from services.gateway.user import User, extra_of
from strata import serviceaccounts as sa
from strata.api import meta
from strata.serviceaccounts import PublicKey

Claims = dict[str, Any]
# go-jose's jwt.DefaultLeeway, which kube's validator allows on exp and nbf.
LEEWAY_SECONDS = 60
# How many tokens' verified claims are remembered.
VERIFIED_TOKENS = 4096
# go-jose's words for a signature that does not verify.
BAD_SIGNATURE = "go-jose/go-jose: error in cryptographic primitive"


def _segment(part: str) -> Any:
    """A JWT segment's JSON (unpadded base64url, as Go's RawURLEncoding reads it)."""
    if len(part) % 4 == 1 or "=" in part:
        raise ValueError("not raw base64url")
    return orjson.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def peek(token: str) -> tuple[Claims, Claims] | None:
    """(header, claims) of a compact JWT, unverified; None when token is not one
    (kube's hasCorrectIssuer: three parts, a JSON payload)."""
    if token.lstrip().startswith("{"):
        return None
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        header, claims = _segment(parts[0]), _segment(parts[1])
    except (ValueError, binascii.Error, orjson.JSONDecodeError):
        return None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return None
    return header, claims


def _quoted(values: Sequence[str]) -> str:
    """A list as Go's %q writes a []string: ["a" "b"]."""
    return "[" + " ".join(orjson.dumps(v).decode() for v in values) + "]"


def _audiences(claims: Claims) -> tuple[str, ...]:
    """aud as go-jose reads it: one string or a list of them."""
    aud = claims.get("aud")
    if aud is None:
        return ()
    return (aud,) if isinstance(aud, str) else tuple(str(a) for a in aud)


class ServiceAccountTokens:
    def __init__(
        self,
        keys: Sequence[PublicKey],
        issuers: tuple[str, ...],
        api_audiences: tuple[str, ...],
        accounts: AccountLookup,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._keys: dict[str, list[PublicKey]] = {}
        for key in keys:
            self._keys.setdefault(sa.key_id(key), []).append(key)
        self._all = list(keys)
        self._issuers = frozenset(issuers)
        self._implicit = api_audiences
        self._accounts = accounts
        self._clock = clock
        self._verified: OrderedDict[bytes, Claims] = OrderedDict()

    async def authenticate_token(
        self, token: str, audiences: tuple[str, ...]
    ) -> Authenticated | None:
        digest = hashlib.sha256(token.encode()).digest()
        claims = self._verified.get(digest)
        if claims is not None:
            self._verified.move_to_end(digest)
        else:
            peeked = peek(token)
            if peeked is None:
                return None
            header, unverified = peeked
            issuer = unverified.get("iss")
            ours = issuer == sa.LEGACY_ISSUER or issuer in self._issuers
            if not isinstance(issuer, str) or not ours:
                return None
            claims = self._verify(token, str(header.get("kid") or ""), digest)
        legacy = claims.get("iss") == sa.LEGACY_ISSUER
        token_audiences = _audiences(claims) or self._implicit
        good_for = tuple(a for a in token_audiences if a in audiences)
        if not good_for and self._implicit:
            raise Rejected(
                f"token audiences {_quoted(token_audiences)} is invalid for the target "
                f"audiences {_quoted(audiences)}"
            )
        user = await (self._legacy(token, claims) if legacy else self._bound(claims))
        return Authenticated(user, good_for)

    def _verify(self, token: str, kid: str, digest: bytes) -> Claims:
        """The token's claims once its signature verifies with a key of its kid
        (any key when it names none), remembered under digest; or kube's refusal."""
        keys = self._keys.get(kid, []) if kid else self._all
        if not keys:
            raise Rejected("invalid signature, no keys found")
        problems: list[str] = []
        for key in keys:
            try:
                decoded = jwt.api_jws.decode_complete(token, key, algorithms=[sa.algorithm(key)])
            except jwt.InvalidAlgorithmError:
                problems.append("go-jose/go-jose: unexpected signature algorithm")
                continue
            except jwt.InvalidTokenError:
                problems.append(BAD_SIGNATURE)
                continue
            claims: Claims = orjson.loads(decoded["payload"])
            self._verified[digest] = claims
            if len(self._verified) > VERIFIED_TOKENS:
                self._verified.popitem(last=False)
            return claims
        raise Rejected(problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]")

    def _times(self, claims: Claims) -> None:
        """go-jose's Claims.Validate with kube's leeway, in kube's words."""
        now = self._clock()
        nbf, exp, iat = claims.get("nbf"), claims.get("exp"), claims.get("iat")
        if isinstance(nbf, int | float) and now + LEEWAY_SECONDS < nbf:
            raise Rejected("service account token is not valid yet")
        if isinstance(exp, int | float) and now - LEEWAY_SECONDS > exp:
            raise Rejected("service account token has expired")
        if isinstance(iat, int | float) and now + LEEWAY_SECONDS < iat:
            raise Rejected(
                "service account token claims could not be validated due to unexpected "
                "validation error"
            )

    def _deleted_before_leeway(self, obj: Claims) -> bool:
        """Whether obj was marked for deletion longer ago than the leeway."""
        stamp = (obj.get("metadata") or {}).get("deletionTimestamp")
        if not stamp:
            return False
        return meta.parse_rfc3339(stamp).timestamp() < self._clock() - LEEWAY_SECONDS

    async def _bound(self, claims: Claims) -> User:
        """kube's claims.go validator: a TokenRequest's token."""
        self._times(claims)
        private = claims.get(sa.KUBERNETES_CLAIM) or {}
        namespace = str(private.get("namespace") or "")
        ref = private.get("serviceaccount") or {}
        name, uid = str(ref.get("name") or ""), str(ref.get("uid") or "")
        account = await self._accounts.service_account(namespace, name)
        if account is None:
            raise Rejected(f'serviceaccounts "{name}" not found')
        if self._deleted_before_leeway(account):
            raise Rejected(f"service account {namespace}/{name} has been deleted")
        found_uid = account["metadata"].get("uid", "")
        if found_uid != uid:
            raise Rejected(f"service account UID ({found_uid}) does not match claim ({uid})")
        if (secret_ref := private.get("secret")) is not None:
            secret = await self._accounts.secret(namespace, str(secret_ref.get("name") or ""))
            if secret is None or self._deleted_before_leeway(secret):
                raise Rejected("service account token has been invalidated")
            secret_uid = secret["metadata"].get("uid", "")
            if secret_uid != secret_ref.get("uid"):
                raise Rejected(
                    f"secret UID ({secret_uid}) does not match service account secret ref "
                    f"claim ({secret_ref.get('uid')})"
                )
        if private.get("pod") is not None or private.get("node") is not None:
            # strata serves no Pods or Nodes: a token bound to one is bound to nothing.
            raise Rejected("service account token has been invalidated")
        jti = claims.get("jti")
        extra = {sa.CREDENTIAL_ID: [f"JTI={jti}"]} if isinstance(jti, str) and jti else {}
        return User(sa.username(namespace, name), uid, sa.groups(namespace), extra_of(extra))

    async def _legacy(self, token: str, claims: Claims) -> User:
        """kube's legacy.go validator: a legacy token Secret's token."""
        subject = str(claims.get("sub") or "")
        namespace = str(claims.get(sa.LEGACY_NAMESPACE) or "")
        secret_name = str(claims.get(sa.LEGACY_SECRET) or "")
        name = str(claims.get(sa.LEGACY_NAME) or "")
        uid = str(claims.get(sa.LEGACY_UID) or "")
        for value, missing in (
            (subject, "sub claim is missing"),
            (namespace, "namespace claim is missing"),
            (secret_name, "secretName claim is missing"),
            (name, "serviceAccountName claim is missing"),
            (uid, "serviceAccountUID claim is missing"),
        ):
            if not value:
                raise Rejected(missing)
        if sa.split_username(subject) != (namespace, name):
            raise Rejected("sub claim is invalid")
        secret = await self._accounts.secret(namespace, secret_name)
        if secret is None or (secret.get("metadata") or {}).get("deletionTimestamp"):
            raise Rejected("Token has been invalidated")
        stored = (secret.get("data") or {}).get("token", "")
        if base64.b64decode(stored) != token.encode():
            raise Rejected("Token does not match server's copy")
        account = await self._accounts.service_account(namespace, name)
        if account is None:
            raise Rejected(f'serviceaccounts "{name}" not found')
        if account["metadata"].get("deletionTimestamp"):
            raise Rejected(f"ServiceAccount {namespace}/{name} has been deleted")
        found_uid = account["metadata"].get("uid", "")
        if found_uid != uid:
            raise Rejected(f"ServiceAccount UID ({found_uid}) does not match claim ({uid})")
        return User(sa.username(namespace, name), uid, sa.groups(namespace))
