"""kube's union authorizer and rule resolver: the authorizers --authorization-mode
names, asked in order. The first to allow or deny decides; one with no
opinion passes the request on, and when none decides the reasons are joined
one a line. Rules are every resolver's, together. In front of them all, as in
kube, the superuser group (system:masters) is allowed everything, whatever
the modes; it lists no rules, so RBAC's cluster-admin binding is what a
rules review shows for it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.gateway.authorizers import Attributes, Decision, Mode, Rules
from services.gateway.user import User

SUPERUSER_GROUP = "system:masters"


class Union:
    def __init__(self, authorizers: Sequence[Mode]) -> None:
        self.authorizers = tuple(authorizers)

    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        if SUPERUSER_GROUP in attributes.user.groups:
            return Decision.ALLOW, ""
        reasons = []
        for authorizer in self.authorizers:
            decision, reason = await authorizer.authorize(attributes)
            if decision is not Decision.NO_OPINION:
                return decision, reason
            if reason:
                reasons.append(reason)
        return Decision.NO_OPINION, "\n".join(reasons)

    def rules_for(self, user: User, namespace: str) -> Rules:
        resource: list[dict[str, Any]] = []
        non_resource: list[dict[str, Any]] = []
        errors: tuple[str, ...] = ()
        incomplete = False
        for authorizer in self.authorizers:
            rules = authorizer.rules_for(user, namespace)
            resource += rules.resource
            non_resource += rules.non_resource
            incomplete = incomplete or rules.incomplete
            errors += rules.errors
        return Rules(resource, non_resource, incomplete, errors)
