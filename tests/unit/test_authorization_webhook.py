"""The Webhook authorization mode against a real HTTPS server on loopback: the
SubjectAccessReview kube's webhook sends (v1 and v1beta1), the server's answer
as the decision, answers cached for their TTLs, a server that fails being an
error (with no opinion, the flags' failure policy), and a rules review that
asks it being incomplete."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestServer

from services.gateway.authorizers import Attributes, AuthorizerError, Decision
from services.gateway.authorizers.modes import Configured, ModeError, parse
from services.gateway.authorizers.webhook import NO_RULES, Webhook, WebhookOptions
from services.gateway.user import User
from tests.support.tls import make_certificates

ALICE = User("alice", "u-1", ("devs", "system:authenticated"), (("team", ("a",)),))


class Reviewer:
    """The external server: answers from `answers` by user, remembers what it got."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.answers: dict[str, dict[str, Any]] = {}
        self.fail = False

    async def review(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer hook-token":
            return web.json_response({}, status=401)
        body = await request.json()
        self.received.append(body)
        if self.fail:
            return web.json_response({"kind": "Status", "code": 500}, status=500)
        status = self.answers.get(body["spec"]["user"], {"allowed": False})
        return web.json_response({**body, "status": status})


@pytest.fixture
async def reviewer(tmp_path: Path) -> AsyncIterator[tuple[Reviewer, Path]]:
    make_certificates(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    hook = Reviewer()
    app = web.Application()
    app.router.add_post("/authorize", hook.review)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server(ssl=context)
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "hook",
                "cluster": {
                    "server": f"https://127.0.0.1:{server.port}/authorize",
                    "certificate-authority": str(tmp_path / "ca.crt"),
                },
            }
        ],
        "users": [{"name": "gateway", "user": {"token": "hook-token"}}],
        "contexts": [{"name": "c", "context": {"cluster": "hook", "user": "gateway"}}],
        "current-context": "c",
    }
    (tmp_path / "webhook.yaml").write_text(yaml.safe_dump(config))
    yield hook, tmp_path / "webhook.yaml"
    await server.close()


def _get(user: User, name: str = "cfg") -> Attributes:
    return Attributes(user, "get", "", True, "", "v1", "configmaps", namespace="default", name=name)


async def test_the_webhook_decides_and_its_answers_are_cached(
    reviewer: tuple[Reviewer, Path],
) -> None:
    hook, config = reviewer
    webhook = Webhook(WebhookOptions(config, "v1", authorized_ttl=60, unauthorized_ttl=0))
    try:
        hook.answers["alice"] = {"allowed": True, "reason": "alice may"}
        hook.answers["bob"] = {"allowed": False, "denied": True, "reason": "never bob"}
        assert await webhook.authorize(_get(ALICE)) == (Decision.ALLOW, "alice may")
        assert hook.received == [
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "metadata": {"creationTimestamp": None},
                "spec": {
                    "resourceAttributes": {
                        "namespace": "default",
                        "verb": "get",
                        "version": "v1",
                        "resource": "configmaps",
                        "name": "cfg",
                    },
                    "user": "alice",
                    "groups": ["devs", "system:authenticated"],
                    "extra": {"team": ["a"]},
                    "uid": "u-1",
                },
                "status": {"allowed": False},
            }
        ]
        # Allowed answers are kept for their TTL; the others here for none.
        assert await webhook.authorize(_get(ALICE)) == (Decision.ALLOW, "alice may")
        bob = User("bob")
        assert await webhook.authorize(_get(bob)) == (Decision.DENY, "never bob")
        assert await webhook.authorize(_get(bob)) == (Decision.DENY, "never bob")
        carol = User("carol")
        path = Attributes(carol, "get", "/metrics", False)
        assert await webhook.authorize(path) == (Decision.NO_OPINION, "")
        assert hook.received[-1]["spec"]["nonResourceAttributes"] == {
            "path": "/metrics",
            "verb": "get",
        }
        assert len(hook.received) == 4
        hook.fail = True
        with pytest.raises(AuthorizerError) as failed:
            await webhook.authorize(_get(carol, "other"))
        assert failed.value.decision is Decision.NO_OPINION
        assert str(failed.value) == (
            "the server responded with the status code 500 but did not return more information"
        )
        assert webhook.rules_for(ALICE, "default").errors == (NO_RULES,)
        assert webhook.rules_for(ALICE, "default").incomplete
    finally:
        await webhook.close()


@pytest.fixture
async def registry() -> AsyncIterator[grpc.aio.Channel]:
    """A registry channel Webhook mode never dials (only RBAC reads the registry)."""
    channel = grpc.aio.insecure_channel("127.0.0.1:9")
    yield channel
    await channel.close()


async def test_v1beta1_reviews_name_the_groups_group(
    reviewer: tuple[Reviewer, Path], registry: grpc.aio.Channel
) -> None:
    hook, config = reviewer
    configured = Configured(parse("Webhook", WebhookOptions(config)), registry)
    try:
        await configured.authorizer.authorize(_get(ALICE))
        spec = hook.received[0]["spec"]
        assert hook.received[0]["apiVersion"] == "authorization.k8s.io/v1beta1"
        assert spec["group"] == ["devs", "system:authenticated"]
        assert "groups" not in spec
    finally:
        await configured.stop()


async def test_a_webhook_config_that_cannot_be_read_is_refused(
    tmp_path: Path, registry: grpc.aio.Channel
) -> None:
    (tmp_path / "bad.yaml").write_text("clusters: []\n")
    with pytest.raises(ModeError, match="--authorization-webhook-config-file"):
        Configured(parse("Webhook", WebhookOptions(tmp_path / "bad.yaml")), registry)
