"""What an authorizer is (kube's authorizer.Authorizer): given the attributes of
a request, it allows it, denies it, or has no opinion. The chain's
authorization step (services/gateway/chain/authorization.py) asks the one the
gateway was built with; only an allowed request goes on.

The implementations live in this package, one module each
(services/gateway/authorizers/always_allow.py is strata's only one today). The
handlers import none of it: an import-linter contract in pyproject.toml says so."""

from __future__ import annotations

import enum
from typing import NamedTuple, Protocol

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


class Authorizer(Protocol):
    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        """The decision, and why (kube's reason, written after a denial's message)."""
        ...
