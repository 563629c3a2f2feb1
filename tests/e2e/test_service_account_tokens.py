"""Service-account tokens end to end (issue 29, acceptance 2): `kubectl create
token` gives a token that works, and that stops working when its account is
deleted and made again, when the Secret it is bound to is deleted, and once it
has expired; a TokenReview of it answers as kube's; the issuer's OIDC discovery
document and JWKS verify it with PyJWT. Legacy token Secrets are filled in by
the tokens controller, and their tokens die with their account.

Expected answers are kube-apiserver v1.36's, recorded with ../shared/kube for
the same requests (TokenRequest's bodies and refusals, TokenReview's status
and errors, the discovery documents' headers). An expired token cannot be
waited for (kube's shortest is ten minutes): the test signs one with the
registry's own key (home/pki/sa.key), with kube's claims and an exp two
minutes past, beyond kube's minute of leeway; and the token kubectl made is
also checked expired by the gateway's verifier with its clock an hour ahead."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import jwt
import pytest

from services.gateway.authenticators.serviceaccounts import ServiceAccountTokens
from services.gateway.authenticators.tokens import Tokens
from services.gateway.pki import issue_client_certificate
from strata import serviceaccounts as sa
from strata.dev import System

Obj = dict[str, Any]
NAMESPACE = "sa-tokens"
ISSUER = sa.DEFAULT_ISSUER
REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCOUNTS = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts"


def kubectl(system: System, *args: str) -> str:
    env = {**os.environ, "KUBECONFIG": str(system.kubeconfig)}
    done = subprocess.run(
        ["kubectl", *args], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def create_token(system: System, account: str, *more: str) -> str:
    out = await asyncio.to_thread(
        kubectl, system, "create", "token", account, "-n", NAMESPACE, *more
    )
    return out.strip()


async def json_of(http: aiohttp.ClientSession, method: str, path: str, body: Any = None) -> Obj:
    async with http.request(method, path, json=body) as response:
        found: Obj = await response.json()
        return found


async def status_with(system: System, token: str) -> int:
    """What a SelfSubjectReview (allowed to every authenticated user) answers token."""
    assert system.endpoints is not None
    context = ssl.create_default_context(cafile=str(system.ca_file))
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session,
        session.post(
            f"{system.endpoints.gateway}/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
            headers={"Authorization": f"Bearer {token}"},
        ) as response,
    ):
        return response.status


async def review(http: aiohttp.ClientSession, token: str, **spec: Any) -> Obj:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    answer = await json_of(http, "POST", REVIEWS, {**body, "spec": {"token": token, **spec}})
    status: Obj = answer["status"]
    return status


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 15) -> None:
    """Until check holds (a controller's or an informer's work is asynchronous)."""
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def refused_within(http: aiohttp.ClientSession, token: str, error: str) -> None:
    """The token's review says error (the gateway's informers hear of a deletion
    a moment after it)."""

    async def said() -> bool:
        return (await review(http, token)).get("error") == error

    await eventually(said)


@pytest.fixture(scope="module")
async def namespace(http: aiohttp.ClientSession) -> str:
    await json_of(http, "POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    return NAMESPACE


async def account(http: aiohttp.ClientSession, name: str) -> Obj:
    return await json_of(http, "POST", ACCOUNTS, {"metadata": {"name": name}})


async def verified_by_discovery(system: System, token: str) -> Obj:
    """token's claims, verified with PyJWT against the key the issuer's JWKS
    names by kid, after checking the discovery documents are kube's."""
    assert system.endpoints is not None
    gateway = system.endpoints.gateway
    context = ssl.create_default_context(cafile=str(system.ca_file))
    headers = {"Authorization": f"Bearer {system.admin_token}"}

    def fetch(path: str) -> tuple[Any, Any]:
        request = urllib.request.Request(gateway + path, headers=headers)
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.headers, response.read()

    found, document = await asyncio.to_thread(fetch, "/.well-known/openid-configuration")
    assert found["Content-Type"] == "application/json"
    assert found["Cache-Control"] == "public, max-age=3600"
    discovery = json.loads(document)
    assert discovery == {
        "issuer": ISSUER,
        "jwks_uri": f"{gateway}/openid/v1/jwks",
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }
    found, keys = await asyncio.to_thread(fetch, "/openid/v1/jwks")
    assert found["Content-Type"] == "application/jwk-set+json"
    keyset = jwt.PyJWKSet.from_json(keys.decode())
    key = next(k for k in keyset.keys if k.key_id == jwt.get_unverified_header(token)["kid"])
    verified: Obj = jwt.decode(token, key, algorithms=["RS256"], audience=ISSUER, issuer=ISSUER)
    return verified


async def review_at(system: System, robot: Obj, token: str, now: float) -> str:
    """The gateway's verifier's error for token with its clock at now (robot
    still there): how a token is seen to expire without waiting an hour."""
    public = sa.load_public_keys((system.home / "pki" / "sa.pub").read_bytes())

    class Present:
        async def service_account(self, namespace: str, name: str) -> Obj | None:
            return robot

        async def secret(self, namespace: str, name: str) -> Obj | None:
            return None

    later = ServiceAccountTokens(public, (ISSUER,), (ISSUER,), Present(), lambda: now)
    return (await Tokens([later], (ISSUER,)).review(token)).error


async def test_kubectl_create_token_works_and_verifies_with_the_issuers_keys(
    system: System, http: aiohttp.ClientSession, namespace: str
) -> None:
    robot = await account(http, "robot")
    token = await create_token(system, "robot")
    assert await status_with(system, token) == 201
    whoami = await asyncio.to_thread(kubectl, system, "auth", "whoami", f"--token={token}")
    assert "system:serviceaccount:sa-tokens:robot" in whoami

    claims = jwt.decode(token, options={"verify_signature": False})
    status = await review(http, token)
    # kube's TokenReview of a TokenRequest's token.
    assert status == {
        "authenticated": True,
        "user": {
            "username": "system:serviceaccount:sa-tokens:robot",
            "uid": robot["metadata"]["uid"],
            "groups": [
                "system:serviceaccounts",
                "system:serviceaccounts:sa-tokens",
                "system:authenticated",
            ],
            "extra": {"authentication.kubernetes.io/credential-id": [f"JTI={claims['jti']}"]},
        },
        "audiences": [ISSUER],
    }
    # kube: an audience the token does not name.
    assert await review(http, token, audiences=["x"]) == {
        "user": {},
        "error": f'[invalid bearer token, token audiences ["{ISSUER}"] is invalid for the '
        'target audiences ["x"]]',
    }

    # The issuer's discovery, as kube serves it, verifies the token.
    verified = await verified_by_discovery(system, token)
    assert verified["kubernetes.io"] == {
        "namespace": NAMESPACE,
        "serviceaccount": {"name": "robot", "uid": robot["metadata"]["uid"]},
    }
    assert verified["sub"] == "system:serviceaccount:sa-tokens:robot"
    assert verified["exp"] - verified["iat"] == 3600
    # kubectl's protobuf TokenRequest with a duration and audiences.
    other = await create_token(system, "robot", "--duration=20m", "--audience=a", "--audience=b")
    other_claims = jwt.decode(other, options={"verify_signature": False})
    assert (other_claims["exp"] - other_claims["iat"], other_claims["aud"]) == (1200, ["a", "b"])

    # The same token, to the gateway's verifier an hour and a minute later, has expired.
    expired = await review_at(system, robot, token, verified["exp"] + 61)
    assert expired == "[invalid bearer token, service account token has expired]"


async def test_a_token_dies_with_its_account(
    system: System, http: aiohttp.ClientSession, namespace: str
) -> None:
    first = await account(http, "doomed")
    token = await create_token(system, "doomed")
    assert await status_with(system, token) == 201
    await json_of(http, "DELETE", f"{ACCOUNTS}/doomed")
    await refused_within(http, token, '[invalid bearer token, serviceaccounts "doomed" not found]')
    assert await status_with(system, token) == 401
    again = await account(http, "doomed")
    # The same name again is another account: the token was not made for it.
    await refused_within(
        http,
        token,
        f"[invalid bearer token, service account UID ({again['metadata']['uid']}) does not "
        f"match claim ({first['metadata']['uid']})]",
    )
    assert await status_with(system, token) == 401


async def test_a_bound_token_dies_with_its_secret(
    system: System, http: aiohttp.ClientSession, namespace: str
) -> None:
    await account(http, "bound")
    secrets = f"/api/v1/namespaces/{NAMESPACE}/secrets"
    await json_of(http, "POST", secrets, {"metadata": {"name": "anchor"}})
    token = await create_token(
        system, "bound", "--bound-object-kind=Secret", "--bound-object-name=anchor"
    )
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["kubernetes.io"]["secret"]["name"] == "anchor"
    assert await status_with(system, token) == 201
    await json_of(http, "DELETE", f"{secrets}/anchor")
    await refused_within(
        http, token, "[invalid bearer token, service account token has been invalidated]"
    )
    assert await status_with(system, token) == 401


async def test_an_expired_token_is_refused(
    system: System, http: aiohttp.ClientSession, namespace: str
) -> None:
    robot = await account(http, "late")
    key = sa.load_signing_key((system.home / "pki" / "sa.key").read_bytes())
    now = int(time.time())
    claims = sa.bound_claims(
        issuer=ISSUER,
        audiences=[ISSUER],
        namespace=NAMESPACE,
        account=("late", robot["metadata"]["uid"]),
        secret=None,
        issued_at=now - 720,
        expiration_seconds=600,
        jti="late-1",
    )
    token = sa.sign(claims, key)
    assert await status_with(system, token) == 401
    assert await review(http, token) == {
        "user": {},
        "error": "[invalid bearer token, service account token has expired]",
    }
    # The same, not yet expired, is good.
    fresh = sa.sign({**claims, "exp": now + 600}, key)
    assert await status_with(system, fresh) == 201


# A TokenRequest as kubectl and curl send it, and where, for the account "asked".
TOKEN_REQUEST: Obj = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
ASKED = f"{ACCOUNTS}/asked/token"
# kube's refusals of TokenRequests to the account "asked": where, what was
# sent, kube's status and message.
REFUSALS: list[tuple[str, Obj, int, str]] = [
    (
        f"{ACCOUNTS}/nobody/token",
        TOKEN_REQUEST,
        404,
        'serviceaccounts "nobody" not found',
    ),
    (
        ASKED,
        {**TOKEN_REQUEST, "spec": {"expirationSeconds": 100}},
        422,
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid '
        "value: 100: may not specify a duration less than 10 minutes",
    ),
    (
        ASKED,
        {**TOKEN_REQUEST, "spec": {"expirationSeconds": 4294967297}},
        422,
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid '
        "value: 4294967297: may not specify a duration larger than 2^32 seconds",
    ),
    (
        ASKED,
        {**TOKEN_REQUEST, "metadata": {"name": "other"}},
        422,
        'TokenRequest.authentication.k8s.io "asked" is invalid: metadata.name: Invalid value: '
        '"other": must match the service account name if specified',
    ),
    (
        ASKED,
        {
            **TOKEN_REQUEST,
            "spec": {"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}},
        },
        400,
        "cannot bind token to object of type /v1, Kind=ConfigMap",
    ),
    (
        ASKED,
        {
            **TOKEN_REQUEST,
            "spec": {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "gone"}},
        },
        404,
        'secrets "gone" not found',
    ),
    (
        ASKED,
        {"apiVersion": "v1", "kind": "ConfigMap"},
        400,
        'ConfigMap in version "v1" cannot be handled as a TokenRequest: converting '
        "(v1.ConfigMap) to (authentication.TokenRequest): unknown conversion",
    ),
    (
        "/api/v1/namespaces/nowhere/serviceaccounts/asked/token",
        TOKEN_REQUEST,
        404,
        'namespaces "nowhere" not found',
    ),
]


async def test_token_requests_are_answered_as_kube(
    system: System, http: aiohttp.ClientSession, namespace: str
) -> None:
    robot = await account(http, "asked")
    async with http.post(ASKED, json=TOKEN_REQUEST, headers={"User-Agent": "curl/8"}) as response:
        assert response.status == 201
        answer = await response.json()
    created = answer["metadata"]["creationTimestamp"]
    assert answer == {
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {
            "name": "asked",
            "namespace": NAMESPACE,
            "uid": robot["metadata"]["uid"],
            "creationTimestamp": created,
            "managedFields": [
                {
                    "manager": "curl",
                    "operation": "Update",
                    "apiVersion": "authentication.k8s.io/v1",
                    "time": created,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:expirationSeconds": {}}},
                    "subresource": "token",
                }
            ],
        },
        "spec": {"audiences": [ISSUER], "expirationSeconds": 3600, "boundObjectRef": None},
        "status": {
            "token": answer["status"]["token"],
            "expirationTimestamp": answer["status"]["expirationTimestamp"],
        },
    }
    for where, sent, code, message in REFUSALS:
        async with http.post(where, json=sent) as response:
            refused = await response.json()
        assert (response.status, refused["message"]) == (code, message), where
    async with http.get(ASKED) as response:
        assert response.status == 405
    listing = await json_of(http, "GET", "/api/v1")
    token_entry = next(r for r in listing["resources"] if r["name"] == "serviceaccounts/token")
    assert {k: token_entry[k] for k in ("group", "version", "kind", "verbs")} == {
        "group": "authentication.k8s.io",
        "version": "v1",
        "kind": "TokenRequest",
        "verbs": ["create"],
    }


async def test_legacy_token_secrets_are_filled_in_and_die_with_their_account(
    system: System, http: aiohttp.ClientSession, namespace: str
) -> None:
    robot = await account(http, "legacy")
    secrets = f"/api/v1/namespaces/{NAMESPACE}/secrets"
    legacy = {
        "metadata": {
            "name": "legacy-token",
            "annotations": {"kubernetes.io/service-account.name": "legacy"},
        },
        "type": "kubernetes.io/service-account-token",
    }
    await json_of(http, "POST", secrets, legacy)

    async def filled() -> bool:
        return bool((await json_of(http, "GET", f"{secrets}/legacy-token")).get("data"))

    await eventually(filled)
    secret = await json_of(http, "GET", f"{secrets}/legacy-token")
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    assert sorted(data) == ["ca.crt", "namespace", "token"]
    assert data["namespace"] == NAMESPACE.encode()
    assert data["ca.crt"] == system.ca_file.read_bytes()
    annotations = secret["metadata"]["annotations"]
    assert annotations["kubernetes.io/service-account.uid"] == robot["metadata"]["uid"]
    token = data["token"].decode()
    # kube's legacy claims.
    assert jwt.decode(token, options={"verify_signature": False}) == {
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": NAMESPACE,
        "kubernetes.io/serviceaccount/secret.name": "legacy-token",
        "kubernetes.io/serviceaccount/service-account.name": "legacy",
        "kubernetes.io/serviceaccount/service-account.uid": robot["metadata"]["uid"],
        "sub": "system:serviceaccount:sa-tokens:legacy",
    }
    status = await review(http, token)
    assert status["authenticated"] is True
    assert "extra" not in status["user"]
    # A Secret naming no account is deleted, as kube's tokens controller does.
    annotations = {"kubernetes.io/service-account.name": "nobody"}
    orphan = {**legacy, "metadata": {"name": "orphan", "annotations": annotations}}
    await json_of(http, "POST", secrets, orphan)
    await json_of(http, "DELETE", f"{ACCOUNTS}/legacy")

    async def gone() -> bool:
        found = [await json_of(http, "GET", f"{secrets}/{n}") for n in ("legacy-token", "orphan")]
        return all(f.get("kind") == "Status" for f in found)

    await eventually(gone)
    await refused_within(http, token, "[invalid bearer token, Token has been invalidated]")
    assert await status_with(system, token) == 401


def test_kubectl_as(system: System) -> None:
    """`kubectl --as` (the admin may impersonate anyone)."""
    out = kubectl(system, "auth", "whoami", "--as=bob", "--as-group=devs", "-o", "json")
    info = json.loads(out)["status"]["userInfo"]
    assert info == {"username": "bob", "groups": ["devs", "system:authenticated"]}


async def test_a_client_certificate_is_asked_before_a_token(system: System, tmp_path: Path) -> None:
    """kube's authenticators: the certificate's user, whatever token comes with it
    (recorded: a good certificate and a bearer token kube does not know)."""
    cert, key = issue_client_certificate(system.home / "pki", "carol", ("team1",))
    (tmp_path / "c.crt").write_bytes(cert)
    (tmp_path / "c.key").write_bytes(key)
    assert system.endpoints is not None
    context = ssl.create_default_context(cafile=str(system.ca_file))
    context.load_cert_chain(tmp_path / "c.crt", tmp_path / "c.key")
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as session,
        session.post(
            f"{system.endpoints.gateway}/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json=body,
            headers={"Authorization": "Bearer garbage"},
        ) as response,
    ):
        assert response.status == 201
        info = (await response.json())["status"]["userInfo"]
    assert (info["username"], info["groups"]) == ("carol", ["team1", "system:authenticated"])
