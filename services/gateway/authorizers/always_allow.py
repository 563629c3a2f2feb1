"""kube's AlwaysAllow authorizer (--authorization-mode=AlwaysAllow): every
request is allowed, and every user may do everything."""

from __future__ import annotations

from services.gateway.authorizers import Attributes, Decision, Rules
from services.gateway.user import User

_EVERYTHING = Rules(
    [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
    [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
)


class AlwaysAllow:
    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        return Decision.ALLOW, ""

    def rules_for(self, user: User, namespace: str) -> Rules:
        return _EVERYTHING
