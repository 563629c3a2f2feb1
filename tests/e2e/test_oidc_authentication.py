"""JWT authenticators end to end (issue 29, acceptance 2): a gateway run with
kube's structured authentication configuration (--authentication-config)
trusts a test identity provider on loopback (its discovery document and JWKS
over HTTPS, with a CA of its own), whose tokens map to the configured
username, groups and uid; a token from an issuer it does not know is 401, and
so is one its claim rules refuse. The configuration's anonymous section turns
anonymous requests on (under AlwaysAllow, as kube's, they may then do
anything; a bad token is still 401).

The users and errors are kube-apiserver v1.36's for the same configuration
and tokens, recorded with ../shared/kube."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from strata.dev import System
from tests.support.oidc_issuer import Issuer

Obj = dict[str, Any]
WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
AUDIENCE = "strata"


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Issuer]:
    found = Issuer(tmp_path_factory.mktemp("oidc-issuer"))
    found.start()
    yield found
    found.stop()


@pytest.fixture(scope="module")
def oidc_system(tmp_path_factory: pytest.TempPathFactory, issuer: Issuer) -> Iterator[System]:
    home = tmp_path_factory.mktemp("oidc-home")
    configuration = issuer.configuration(
        AUDIENCE,
        claimValidationRules=[{"claim": "hd", "requiredValue": "example.com"}],
        claimMappings={
            "username": {"claim": "sub", "prefix": "oidc:"},
            "groups": {"claim": "groups", "prefix": "oidc:"},
            "uid": {"claim": "uid"},
        },
    )
    configuration["anonymous"] = {"enabled": True}
    path: Path = home / "authentication.json"
    path.write_text(json.dumps(configuration))
    # AlwaysAllow, so that what anonymous requests may do is authentication's alone.
    env = {"STRATA_AUTHENTICATION_CONFIG": str(path), "STRATA_AUTHORIZATION_MODE": "AlwaysAllow"}
    system = System(home, gateway_port=0, env=env)
    system.start()
    yield system
    system.stop()


@pytest.fixture(scope="module")
async def gateway(oidc_system: System) -> AsyncIterator[aiohttp.ClientSession]:
    assert oidc_system.endpoints is not None
    context = ssl.create_default_context(cafile=str(oidc_system.ca_file))
    async with aiohttp.ClientSession(
        base_url=oidc_system.endpoints.gateway, connector=aiohttp.TCPConnector(ssl=context)
    ) as session:
        yield session


async def whoami(gateway: aiohttp.ClientSession, token: str = "") -> tuple[int, Obj]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    async with gateway.post(WHOAMI, json=body, headers=headers) as response:
        return response.status, await response.json()


async def token_review(gateway: aiohttp.ClientSession, system: System, token: str) -> Obj:
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview"}
    async with gateway.post(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        json={**body, "spec": {"token": token}},
        headers={"Authorization": f"Bearer {system.admin_token}"},
    ) as response:
        answer: Obj = await response.json()
    status: Obj = answer["status"]
    return status


def good(issuer: Issuer, **claims: Any) -> str:
    """A token the configuration accepts, with claims changed (None: left out)."""
    given = {"sub": "alice", "aud": AUDIENCE, "hd": "example.com", "uid": "u-1", "jti": "j-1"}
    merged = {**given, "groups": ["dev", "ops"], **claims}
    return issuer.mint(**{k: v for k, v in merged.items() if v is not None})


@pytest.fixture(scope="module")
async def ready(gateway: aiohttp.ClientSession, issuer: Issuer) -> Obj:
    """The first token's SelfSubjectReview, once the gateway has fetched the
    issuer's keys (in the background, after it starts)."""
    token = good(issuer)
    deadline = time.monotonic() + 30
    while (answer := await whoami(gateway, token))[0] != 201:
        assert time.monotonic() < deadline, answer
        await asyncio.sleep(0.2)
    review: Obj = answer[1]
    return review


async def test_an_issuers_token_maps_to_the_configured_user(
    gateway: aiohttp.ClientSession, oidc_system: System, issuer: Issuer, ready: Obj
) -> None:
    assert issuer.fetched >= 1
    assert ready["status"]["userInfo"] == {
        "username": "oidc:alice",
        "uid": "u-1",
        "groups": ["oidc:dev", "oidc:ops", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": ["JTI=j-1"]},
    }
    status = await token_review(gateway, oidc_system, good(issuer))
    assert (status["authenticated"], status["user"]["username"]) == (True, "oidc:alice")


@pytest.mark.parametrize(
    ("claims", "error"),
    [
        ({"aud": "other"}, 'oidc: verify token: oidc: expected audience "strata" got ["other"]'),
        (
            {"hd": "wrong"},
            "oidc: required claim hd value does not match. Got = wrong, want = example.com",
        ),
        ({"sub": None}, 'oidc: parse username claims "sub": claim not present'),
    ],
)
async def test_tokens_the_configuration_refuses_are_401(
    gateway: aiohttp.ClientSession,
    oidc_system: System,
    issuer: Issuer,
    ready: Obj,
    claims: Obj,
    error: str,
) -> None:
    token = good(issuer, **claims)
    assert (await whoami(gateway, token))[0] == 401
    assert await token_review(gateway, oidc_system, token) == {
        "user": {},
        "error": f"[invalid bearer token, {error}]",
    }


async def test_an_unknown_issuer_is_401(
    gateway: aiohttp.ClientSession,
    oidc_system: System,
    tmp_path: Path,
    ready: Obj,
) -> None:
    stranger = Issuer(tmp_path / "stranger")
    token = stranger.mint(sub="alice", aud=AUDIENCE, hd="example.com")
    stranger.stop()
    assert (await whoami(gateway, token))[0] == 401
    assert await token_review(gateway, oidc_system, token) == {
        "user": {},
        "error": "invalid bearer token",
    }


async def test_anonymous_requests_when_the_configuration_asks(
    gateway: aiohttp.ClientSession,
) -> None:
    status, review = await whoami(gateway)
    assert status == 201
    assert review["status"]["userInfo"] == {
        "username": "system:anonymous",
        "groups": ["system:unauthenticated"],
    }
    # As kube's with AlwaysAllow: anonymous may do anything.
    async with gateway.get("/api/v1/namespaces") as response:
        assert response.status == 200
    # A token no one knows is 401 all the same, on every path.
    for path in ("/api/v1/namespaces", "/healthz"):
        async with gateway.get(path, headers={"Authorization": "Bearer nobody"}) as response:
            assert response.status == 401
