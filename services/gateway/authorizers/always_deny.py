"""kube's AlwaysDeny authorizer (--authorization-mode=AlwaysDeny): it has no
opinion on anything, with kube's reason, so a request no authorizer after it
allows is refused; it lists no rules."""

from __future__ import annotations

from services.gateway.authorizers import NO_RULES, Attributes, Decision, Rules
from services.gateway.user import User

REASON = "Everything is forbidden."


class AlwaysDeny:
    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        return Decision.NO_OPINION, REASON

    def rules_for(self, user: User, namespace: str) -> Rules:
        return NO_RULES
