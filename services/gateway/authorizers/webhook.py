"""kube's Webhook authorizer (--authorization-mode=Webhook): each request's
attributes POSTed as a SubjectAccessReview to an external server named by a
kubeconfig-shaped file (--authorization-webhook-config-file: its cluster's
server, CA and its user's client certificate or token), whose status decides:
allowed, denied, or neither (no opinion). Answers are cached by the review's
spec as kube caches them: an allowing one for --authorization-webhook-cache-
authorized-ttl, any other for --authorization-webhook-cache-unauthorized-ttl.
A server that cannot be reached or answers an error has no opinion (and is
asked again next time). It cannot list a user's rules, so a rules review that
asks it is incomplete, as kube's is."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from services.gateway.authorizers import Attributes, Decision, Rules
from services.gateway.user import User
from strata import telemetry
from strata.client import ApiError, ConfigError, RestClient, load_kubeconfig

log = telemetry.get_logger("strata.gateway.webhook")
VERSIONS = ("v1", "v1beta1")
# As many answers as kube's webhook keeps (all forgotten past it).
CACHE_SIZE = 10000
NO_RULES = "webhook authorizer does not support user rule resolution"

Obj = dict[str, Any]


@dataclass(frozen=True)
class WebhookOptions:
    config_file: Path
    version: str = "v1beta1"
    authorized_ttl: float = 300.0
    unauthorized_ttl: float = 30.0


def review(attributes: Attributes, version: str) -> Obj:
    """The SubjectAccessReview kube's webhook sends for attributes."""
    user = attributes.user
    spec: Obj = {}
    if attributes.resource_request:
        given = {
            "namespace": attributes.namespace,
            "verb": attributes.verb,
            "group": attributes.api_group,
            "version": attributes.api_version,
            "resource": attributes.resource,
            "subresource": attributes.subresource,
            "name": attributes.name,
        }
        spec["resourceAttributes"] = {k: v for k, v in given.items() if v}
    else:
        spec["nonResourceAttributes"] = {"path": attributes.path, "verb": attributes.verb}
    spec["user"] = user.name
    if user.groups:
        # v1beta1 calls the groups "group".
        spec["groups" if version == "v1" else "group"] = list(user.groups)
    if user.extra:
        spec["extra"] = {key: list(values) for key, values in user.extra}
    if user.uid:
        spec["uid"] = user.uid
    return {
        "apiVersion": f"authorization.k8s.io/{version}",
        "kind": "SubjectAccessReview",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": {"allowed": False},
    }


class Webhook:
    def __init__(self, options: WebhookOptions) -> None:
        if options.version not in VERSIONS:
            raise ConfigError(
                f"unsupported webhook version {options.version!r}: want v1 or v1beta1"
            )
        config = load_kubeconfig([options.config_file])
        url = urlsplit(config.server)
        self._path = url.path or "/"
        if url.query:
            self._path += "?" + url.query
        origin = f"{url.scheme}://{url.netloc}"
        self._client = RestClient(dataclasses.replace(config, server=origin), max_retries=1)
        self._options = options
        self._answers: dict[bytes, tuple[float, Decision, str]] = {}

    async def close(self) -> None:
        await self._client.close()

    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        body = review(attributes, self._options.version)
        key = orjson.dumps(body["spec"], option=orjson.OPT_SORT_KEYS)
        now = time.monotonic()
        cached = self._answers.get(key)
        if cached is not None and cached[0] > now:
            return cached[1], cached[2]
        try:
            answer = await self._client.request("POST", self._path, body=body)
        except (ApiError, ConfigError, aiohttp.ClientError, TimeoutError, ValueError) as e:
            log.warning("authorization webhook failed", error=str(e))
            return Decision.NO_OPINION, ""
        status = (answer or {}).get("status") or {}
        if status.get("allowed"):
            decision, ttl = Decision.ALLOW, self._options.authorized_ttl
        else:
            decision = Decision.DENY if status.get("denied") else Decision.NO_OPINION
            ttl = self._options.unauthorized_ttl
        reason = str(status.get("reason") or "")
        if len(self._answers) >= CACHE_SIZE:
            self._answers.clear()
        self._answers[key] = (now + ttl, decision, reason)
        return decision, reason

    def rules_for(self, user: User, namespace: str) -> Rules:
        return Rules([], [], True, (NO_RULES,))
