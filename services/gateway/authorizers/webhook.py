"""kube's Webhook authorizer (--authorization-mode=Webhook): each request's
attributes POSTed as a SubjectAccessReview to an external server named by a
kubeconfig-shaped file (--authorization-webhook-config-file, or a structured
configuration's connectionInfo: its cluster's server, CA and its user's client
certificate or token), whose status decides: allowed, denied, or neither (no
opinion). Answers are cached by the review's spec as kube caches them: an
allowing one for the authorized TTL, any other for the unauthorized TTL. A
structured configuration's match conditions (conditions.py) may skip it.
A server that cannot be reached, answers an error or takes longer than the
timeout is an AuthorizerError whose decision is the failure policy's (no
opinion for the flags): nothing is cached, and the request is answered 500
unless another authorizer allows it, as in kube. It cannot list a user's
rules, so a rules review that asks it is incomplete, as kube's is."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from services.gateway.authorizers import Attributes, AuthorizerError, Decision, Rules
from services.gateway.authorizers.conditions import ConditionFailed, Conditions
from services.gateway.user import User
from strata import telemetry
from strata.client import ApiError, ConfigError, RestClient, in_cluster, load_kubeconfig

log = telemetry.get_logger("strata.gateway.webhook")
VERSIONS = ("v1", "v1beta1")
# As many answers as kube's webhook keeps (all forgotten past it).
CACHE_SIZE = 10000
NO_RULES = "webhook authorizer does not support user rule resolution"

Obj = dict[str, Any]


@dataclass(frozen=True)
class WebhookOptions:
    # The kubeconfig-shaped file naming the server; None: the pod's own
    # (a structured configuration's InClusterConfig).
    config_file: Path | None
    version: str = "v1beta1"
    authorized_ttl: float = 300.0
    unauthorized_ttl: float = 30.0
    # What a request kube's webhook client sends may take.
    timeout: float = 30.0
    # The failure policy: the decision when the webhook cannot be asked.
    decision_on_error: Decision = Decision.NO_OPINION
    conditions: Conditions = field(default_factory=Conditions)
    cache_authorized: bool = True
    cache_unauthorized: bool = True
    # The structured configuration's name for it ("" for the flags').
    name: str = ""


def go_duration(seconds: float) -> str:
    """Go's time.Duration.String, for whole and fractional seconds ("1m30s")."""
    sign, seconds = ("-", -seconds) if seconds < 0 else ("", seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    shown = f"{secs:.9f}".rstrip("0").rstrip(".") or "0"
    if hours:
        return f"{sign}{int(hours)}h{int(minutes)}m{shown}s"
    if minutes:
        return f"{sign}{int(minutes)}m{shown}s"
    return f"{sign}{shown}s"


def _failure(url: str, error: Exception) -> str:
    """Why the webhook could not be asked, as Go's HTTP client says it."""
    # The REST client's refusal for a connection that failed carries the cause.
    if isinstance(error, ApiError) and isinstance(error.__cause__, Exception):
        error = error.__cause__
    if isinstance(error, ApiError):
        # client-go's words for an error answer, which name no URL.
        return str(error) or (
            f"the server responded with the status code {error.code} but did not return "
            "more information"
        )
    if isinstance(error, aiohttp.ClientConnectorError) and (
        error.os_error.errno == errno.ECONNREFUSED
    ):
        reason = f"dial tcp {error.host}:{error.port}: connect: connection refused"
    elif isinstance(error, TimeoutError):
        reason = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    else:
        reason = str(error)
    return f'Post "{url}": {reason}'


def review(attributes: Attributes, version: str) -> Obj:
    """The SubjectAccessReview kube's webhook sends for attributes."""
    user = attributes.user
    spec: Obj = {}
    if attributes.resource_request:
        given = attributes.resource_attributes()
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
        config = load_kubeconfig([options.config_file]) if options.config_file else in_cluster()
        url = urlsplit(config.server)
        # kube's webhook client asks the server to answer within its timeout.
        query = f"{url.query}&" if url.query else ""
        self._path = f"{url.path or '/'}?{query}timeout={go_duration(options.timeout)}"
        origin = f"{url.scheme}://{url.netloc}"
        self._url = origin + self._path
        self._client = RestClient(dataclasses.replace(config, server=origin), max_retries=1)
        self._options = options
        self._answers: dict[bytes, tuple[float, Decision, str]] = {}

    async def close(self) -> None:
        await self._client.close()

    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        options = self._options
        try:
            if not options.conditions.match(attributes):
                return Decision.NO_OPINION, ""
        except ConditionFailed as e:
            raise AuthorizerError(str(e), options.decision_on_error) from None
        body = review(attributes, options.version)
        key = orjson.dumps(body["spec"], option=orjson.OPT_SORT_KEYS)
        now = time.monotonic()
        cached = self._answers.get(key)
        if cached is not None and cached[0] > now:
            return cached[1], cached[2]
        try:
            async with asyncio.timeout(options.timeout):
                answer = await self._client.request("POST", self._path, body=body)
        except (ApiError, ConfigError, aiohttp.ClientError, TimeoutError, ValueError) as e:
            failure = _failure(self._url, e)
            log.warning("authorization webhook failed", webhook=options.name, error=failure)
            raise AuthorizerError(failure, options.decision_on_error) from None
        status = (answer or {}).get("status") or {}
        if status.get("allowed"):
            decision, ttl = Decision.ALLOW, options.authorized_ttl
            kept = options.cache_authorized
        else:
            decision = Decision.DENY if status.get("denied") else Decision.NO_OPINION
            ttl, kept = options.unauthorized_ttl, options.cache_unauthorized
        reason = str(status.get("reason") or "")
        if kept:
            if len(self._answers) >= CACHE_SIZE:
                self._answers.clear()
            self._answers[key] = (now + ttl, decision, reason)
        return decision, reason

    def rules_for(self, user: User, namespace: str) -> Rules:
        return Rules([], [], True, (NO_RULES,))
