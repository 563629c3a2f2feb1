"""The gateway's token authenticators without a server: service-account tokens
checked against accounts and Secrets as kube checks them, a JWT issuer's
tokens mapped to users, the union's TokenReview errors, and the structured
authentication configuration's refusals.

Every error string below is kube-apiserver v1.36's, recorded with
../shared/kube: a TokenReview's status.error for the same token (an expired
one minted with kube's own signing key, a deleted account, a recreated one, a
deleted bound Secret, a wrong audience, a key kube does not have; an OIDC
issuer's token with the wrong audience, an absent or wrong required claim, no
username claim, groups that are not strings, an unknown issuer)."""

from __future__ import annotations

import base64
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from services.gateway.authenticators import config
from services.gateway.authenticators.jwt import JWTAuthenticator
from services.gateway.authenticators.keysets import KeySet
from services.gateway.authenticators.serviceaccounts import ServiceAccountTokens
from services.gateway.authenticators.static import StaticTokens
from services.gateway.authenticators.tokens import AudienceAgnostic, Tokens
from services.gateway.user import User
from strata import serviceaccounts as sa

Obj = dict[str, Any]
ISSUER = "https://kubernetes.default.svc.cluster.local"
API = (ISSUER,)
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
NOW = 1_800_000_000


class Objects:
    """Accounts and Secrets as the gateway's informers would hold them."""

    def __init__(self) -> None:
        self.accounts: dict[tuple[str, str], Obj] = {}
        self.secrets: dict[tuple[str, str], Obj] = {}

    def add_account(self, namespace: str, name: str, uid: str) -> None:
        self.accounts[(namespace, name)] = {"metadata": {"name": name, "uid": uid}}

    def add_secret(self, namespace: str, name: str, uid: str, token: str = "") -> None:
        data = {"token": base64.b64encode(token.encode()).decode()} if token else {}
        self.secrets[(namespace, name)] = {"metadata": {"name": name, "uid": uid}, "data": data}

    async def service_account(self, namespace: str, name: str) -> Obj | None:
        return self.accounts.get((namespace, name))

    async def secret(self, namespace: str, name: str) -> Obj | None:
        return self.secrets.get((namespace, name))


def bound(uid: str = "u1", secret: tuple[str, str] | None = None, **changes: Any) -> str:
    claims = sa.bound_claims(
        issuer=ISSUER,
        audiences=[ISSUER],
        namespace="ns",
        account=("robot", uid),
        secret=secret,
        issued_at=NOW,
        expiration_seconds=3600,
        jti="j1",
    )
    claims.update(changes)
    return sa.sign(claims, KEY)


def union(objects: Objects, clock: float = NOW + 10) -> Tokens:
    accounts = ServiceAccountTokens([KEY.public_key()], API, API, objects, lambda: clock)
    static = AudienceAgnostic(StaticTokens("admin-token", {"t": User("alice", "u-a")}), API)
    return Tokens([static, accounts], API)


@pytest.fixture
def objects() -> Objects:
    found = Objects()
    found.add_account("ns", "robot", "u1")
    found.add_secret("ns", "s1", "su1")
    return found


async def test_a_bound_token_is_its_account(objects: Objects) -> None:
    review = await union(objects).review(bound())
    assert review.user is not None
    assert review.user.info() == {
        "username": "system:serviceaccount:ns:robot",
        "uid": "u1",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": ["JTI=j1"]},
    }
    assert review.audiences == API


@pytest.mark.parametrize(
    ("token", "clock", "error"),
    [
        ("garbage", NOW, "invalid bearer token"),
        (bound(iss="https://other"), NOW, "invalid bearer token"),
        (bound(), NOW + 3600 + 61, "[invalid bearer token, service account token has expired]"),
        (bound(), NOW - 61, "[invalid bearer token, service account token is not valid yet]"),
        (
            bound(uid="old"),
            NOW,
            "[invalid bearer token, service account UID (u1) does not match claim (old)]",
        ),
        (
            bound(aud=["foo"]),
            NOW,
            '[invalid bearer token, token audiences ["foo"] is invalid for the target audiences '
            '["https://kubernetes.default.svc.cluster.local"]]',
        ),
        (
            bound(secret=("gone", "x")),
            NOW,
            "[invalid bearer token, service account token has been invalidated]",
        ),
        (
            sa.sign({"iss": ISSUER, "sub": "x"}, rsa.generate_private_key(65537, 2048)),
            NOW,
            "[invalid bearer token, invalid signature, no keys found]",
        ),
    ],
)
async def test_refusals_are_kubes(objects: Objects, token: str, clock: float, error: str) -> None:
    review = await union(objects, clock).review(token)
    assert (review.user, review.error) == (None, error)


async def test_a_deleted_account_or_bound_secret_ends_its_tokens(objects: Objects) -> None:
    token, tied = bound(), bound(secret=("s1", "su1"))
    tokens = union(objects)
    assert (await tokens.review(tied)).user is not None
    del objects.secrets[("ns", "s1")]
    assert (await tokens.review(tied)).error == (
        "[invalid bearer token, service account token has been invalidated]"
    )
    del objects.accounts[("ns", "robot")]
    assert (await tokens.review(token)).error == (
        '[invalid bearer token, serviceaccounts "robot" not found]'
    )


async def test_a_legacy_token_lives_in_its_secret(objects: Objects) -> None:
    token = sa.sign(sa.legacy_claims("ns", ("robot", "u1"), "legacy"), KEY)
    tokens = union(objects)
    assert (await tokens.review(token)).error == (
        "[invalid bearer token, Token has been invalidated]"
    )
    objects.add_secret("ns", "legacy", "lu", token)
    review = await tokens.review(token)
    assert review.user is not None and review.user.extra == ()
    assert review.user.name == "system:serviceaccount:ns:robot"
    objects.add_secret("ns", "legacy", "lu", "another")
    assert (await tokens.review(token)).error == (
        "[invalid bearer token, Token does not match server's copy]"
    )


async def test_static_tokens_know_nothing_of_audiences(objects: Objects) -> None:
    tokens = union(objects)
    review = await tokens.review("t", ("x", ISSUER))
    assert review.user == User("alice", "u-a", ("system:authenticated",))
    assert review.audiences == API
    assert (await tokens.review("t", ("x",))).error == "invalid bearer token"


# --- a JWT issuer ---------------------------------------------------------------------

OIDC = "https://issuer.example"
OIDC_KEY = ec.generate_private_key(ec.SECP256R1())


class Keys(KeySet):
    """A KeySet that has fetched OIDC_KEY already."""

    def __init__(self) -> None:
        super().__init__(OIDC)
        jwk = sa.jwk(OIDC_KEY.public_key())
        self.keys = [jwt.PyJWK({**jwk, "kid": "k1"})]
        self._by_kid = {"k1": self.keys}
        self.initialized = True


def issuer(**claim_mappings: Any) -> config.Issuer:
    parsed = config.parse(
        {
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "AuthenticationConfiguration",
            "jwt": [
                {
                    "issuer": {"url": OIDC, "audiences": ["strata"]},
                    "claimValidationRules": [{"claim": "hd", "requiredValue": "example.com"}],
                    "claimMappings": {
                        "username": {"claim": "sub", "prefix": "oidc:"},
                        "groups": {"claim": "groups", "prefix": "oidc:"},
                        **claim_mappings,
                    },
                }
            ],
        }
    )
    return parsed.issuers[0]


def oidc_token(**claims: Any) -> str:
    given = {"iss": OIDC, "aud": "strata", "sub": "u1", "hd": "example.com", "exp": NOW + 600}
    given.update(claims)
    given = {k: v for k, v in given.items() if v is not None}
    return jwt.encode(given, OIDC_KEY, algorithm="ES256", headers={"kid": "k1"})


def oidc_union() -> Tokens:
    found = JWTAuthenticator(issuer(), Keys(), lambda: NOW)
    return Tokens([AudienceAgnostic(found, API)], API)


async def test_an_issuers_token_maps_to_its_user() -> None:
    review = await oidc_union().review(oidc_token(groups=["g1", "g2"], jti="j1"))
    assert review.user is not None
    assert review.user.info() == {
        "username": "oidc:u1",
        "groups": ["oidc:g1", "oidc:g2", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": ["JTI=j1"]},
    }
    solo = await oidc_union().review(oidc_token(groups="solo"))
    assert solo.user is not None and solo.user.groups == ("oidc:solo", "system:authenticated")


@pytest.mark.parametrize(
    ("claims", "error"),
    [
        ({"aud": "other"}, 'oidc: verify token: oidc: expected audience "strata" got ["other"]'),
        ({"aud": None}, 'oidc: verify token: oidc: expected audience "strata" got []'),
        (
            {"hd": "wrong"},
            "oidc: required claim hd value does not match. Got = wrong, want = example.com",
        ),
        ({"hd": None}, "oidc: required claim hd not present in ID token"),
        ({"sub": None}, 'oidc: parse username claims "sub": claim not present'),
        (
            {"exp": 1000},
            "oidc: verify token: oidc: token is expired (Token Expiry: 1970-01-01 00:16:40 "
            "+0000 UTC)",
        ),
        (
            {"groups": [1, 2]},
            'oidc: parse groups claim "groups": json: cannot unmarshal array into Go value of '
            "type string",
        ),
    ],
)
async def test_an_issuers_refusals_are_kubes(claims: dict[str, Any], error: str) -> None:
    review = await oidc_union().review(oidc_token(**claims))
    assert review.error == f"[invalid bearer token, {error}]"


async def test_a_token_of_an_unknown_issuer_is_nobodys() -> None:
    review = await oidc_union().review(oidc_token(iss="https://unknown.example"))
    assert (review.user, review.error) == (None, "invalid bearer token")
    other = ec.generate_private_key(ec.SECP256R1())
    claims = {"iss": OIDC, "aud": "strata", "sub": "u1", "hd": "example.com", "exp": NOW + 600}
    forged = jwt.encode(claims, other, algorithm="ES256", headers={"kid": "k1"})
    assert (await oidc_union().review(forged)).error == (
        "[invalid bearer token, oidc: verify token: failed to verify signature: failed to "
        "verify id token signature]"
    )


async def test_an_issuer_not_fetched_yet_refuses() -> None:
    keys = KeySet(OIDC)
    review = await Tokens([JWTAuthenticator(issuer(), keys, time.time)], API).review(oidc_token())
    assert review.error == (
        '[invalid bearer token, oidc: authenticator for issuer "https://issuer.example" is not '
        "initialized]"
    )


def _jwt(url: str, audiences: list[str] | None, username: Obj) -> Obj:
    issuer: Obj = {"url": url}
    if audiences is not None:
        issuer["audiences"] = audiences
    return {"issuer": issuer, "claimMappings": {"username": username}}


def test_configurations_kube_refuses() -> None:
    def refused(given: Obj) -> str:
        obj = {
            "apiVersion": "apiserver.config.k8s.io/v1beta1",
            "kind": "AuthenticationConfiguration",
        }
        with pytest.raises(config.ConfigError) as e:
            config.parse({**obj, "jwt": [given]}, (ISSUER,))
        return str(e.value)

    sub = {"claim": "sub", "prefix": ""}
    assert 'jwt[0].issuer.url: Invalid value: "http://x": URL scheme must be https' in refused(
        _jwt("http://x", ["a"], sub)
    )
    assert "prefix is required when claim is set" in refused(
        _jwt("https://x", ["a"], {"claim": "sub"})
    )
    assert "at least one issuer.audiences is required" in refused(_jwt("https://x", None, sub))
    assert "must not overlap with disallowed issuers" in refused(_jwt(ISSUER, ["a"], sub))
    assert config.NO_CEL in refused(_jwt("https://x", ["a"], {"expression": "claims.sub"}))


async def test_an_es256_signing_key(objects: Objects) -> None:
    """A registry signing with an EC P-256 key: ES256 tokens the gateway verifies."""
    key = ec.generate_private_key(ec.SECP256R1())
    claims = sa.bound_claims(
        issuer=ISSUER,
        audiences=[ISSUER],
        namespace="ns",
        account=("robot", "u1"),
        secret=None,
        issued_at=NOW,
        expiration_seconds=3600,
        jti="j2",
    )
    token = sa.sign(claims, key)
    assert jwt.get_unverified_header(token) == {"alg": "ES256", "kid": sa.key_id(key.public_key())}
    accounts = ServiceAccountTokens([key.public_key()], API, API, objects, lambda: NOW)
    review = await Tokens([accounts], API).review(token)
    assert review.user is not None and review.user.name == "system:serviceaccount:ns:robot"
