"""kube's AlwaysAllow authorizer (--authorization-mode=AlwaysAllow): every
request is allowed. strata's only authorizer until RBAC is enforced: RBAC
objects are stored and validated by the registry, not yet consulted here."""

from __future__ import annotations

from services.gateway.authorizers import Attributes, Decision


class AlwaysAllow:
    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        return Decision.ALLOW, ""
