"""What an authorizer is (kube's authorizer.Authorizer): given the attributes of
a request, it allows it, denies it, or has no opinion. The chain's
authorization step (services/gateway/chain/authorization.py) asks the one the
gateway was built with; only an allowed request goes on. Each mode is
also kube's RuleResolver: what a user may do in a namespace, as a
SelfSubjectRulesReview lists it.

The implementations live in this package, one module each: AlwaysAllow,
AlwaysDeny, RBAC (rbac.py over rbac_policy.py), Webhook, the superuser group,
and the union that chains the modes --authorization-mode names (modes.py).
The handlers import none of it: an import-linter contract in pyproject.toml
says so; what the review APIs need of it the app hands them (reviews.py)."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from services.gateway.user import User


class Decision(enum.Enum):
    DENY = "deny"
    ALLOW = "allow"
    NO_OPINION = "no opinion"


class Attributes(NamedTuple):
    """kube's authorizer.Attributes: who asks to do what, to which resource (a
    resource request) or at which path (any other)."""

    user: User
    # kube's verb: get, list, watch, create, update, patch, delete,
    # deletecollection for a resource request; the lowercased method otherwise.
    verb: str
    path: str
    resource_request: bool
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    def resource_attributes(self) -> dict[str, str]:
        """authorization.k8s.io's ResourceAttributes of a resource request,
        every field there (empty or not), in the API's order."""
        return {
            "namespace": self.namespace,
            "verb": self.verb,
            "group": self.api_group,
            "version": self.api_version,
            "resource": self.resource,
            "subresource": self.subresource,
            "name": self.name,
        }


class Rules(NamedTuple):
    """kube's RulesFor answer: the rules (as authorization.k8s.io's
    ResourceRule and NonResourceRule JSON), whether the list may be
    incomplete, and the errors met while making it."""

    resource: list[dict[str, Any]]
    non_resource: list[dict[str, Any]]
    incomplete: bool = False
    errors: tuple[str, ...] = ()


NO_RULES = Rules([], [])


class AuthorizerError(Exception):
    """An authorizer that could not decide (a webhook that could not be asked):
    kube's error beside a decision, which is decision (its failure policy's).
    The union goes on past one of no opinion; the authorization step answers a
    request nobody allowed 500 when there was an error on the way."""

    def __init__(self, message: str, decision: Decision = Decision.NO_OPINION, reason: str = ""):
        super().__init__(message)
        self.decision = decision
        self.reason = reason


async def decided(authorizer: Authorizer, attributes: Attributes) -> tuple[Decision, str]:
    """authorizer's decision, an error taken for the decision that came with it
    (as kube's callers that only ask whether a request is allowed take it)."""
    try:
        return await authorizer.authorize(attributes)
    except AuthorizerError as e:
        return e.decision, e.reason


class Authorizer(Protocol):
    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        """The decision, and why (kube's reason, written after a denial's
        message); AuthorizerError when it could not decide."""
        ...


class RuleResolver(Protocol):
    def rules_for(self, user: User, namespace: str) -> Rules:
        """What user may do in namespace, as far as this authorizer can list it."""
        ...


class Mode(Authorizer, RuleResolver, Protocol):
    """An authorization mode: an authorizer that is also a rule resolver (each of
    kube's modes is both, and so is their union)."""


def aggregate(messages: Sequence[str]) -> str:
    """kube's utilerrors.NewAggregate(...).Error(): each message once, in order;
    one alone as it is, more in brackets, comma-separated; none is ""."""
    distinct = list(dict.fromkeys(messages))
    if len(distinct) <= 1:
        return "".join(distinct)
    return "[" + ", ".join(distinct) + "]"
