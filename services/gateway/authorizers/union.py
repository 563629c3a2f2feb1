"""kube's union authorizer and rule resolver: the authorizers --authorization-mode
names, asked in order. The first to allow or deny decides; one with no
opinion passes the request on, and when none decides the reasons are joined
one a line. One that could not decide (AuthorizerError) decides as its
failure policy says, and when nobody allows the request the errors met are
the union's error, joined as kube's aggregate joins them. Rules are every
resolver's, together. In front of them all, as in kube, the superuser group
(system:masters) is allowed everything, whatever the modes; it lists no
rules, so RBAC's cluster-admin binding is what a rules review shows for it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.gateway.authorizers import (
    Attributes,
    AuthorizerError,
    Decision,
    Mode,
    Rules,
    aggregate,
)
from services.gateway.user import SUPERUSER_GROUP, User


class Union:
    def __init__(self, authorizers: Sequence[Mode]) -> None:
        self.authorizers = tuple(authorizers)

    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        if SUPERUSER_GROUP in attributes.user.groups:
            return Decision.ALLOW, ""
        reasons: list[str] = []
        failures: list[str] = []
        for authorizer in self.authorizers:
            try:
                decision, reason = await authorizer.authorize(attributes)
            except AuthorizerError as e:
                if e.decision is not Decision.NO_OPINION:
                    raise
                failures.append(str(e))
                decision, reason = e.decision, e.reason
            if decision is not Decision.NO_OPINION:
                return decision, reason
            if reason:
                reasons.append(reason)
        if failures:
            raise AuthorizerError(aggregate(failures), Decision.NO_OPINION, "\n".join(reasons))
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
