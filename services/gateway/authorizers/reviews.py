"""What the review APIs (authorization.k8s.io/v1 SubjectAccessReview and its
kin, served by services/gateway/handlers/reviews.py) ask of the authorizer:
a review's spec put to it as kube's authorizationutil puts one, and its
answer and its rules written as the review's status."""

from __future__ import annotations

from typing import Any

from services.gateway.authorizers import Attributes, AuthorizerError, Decision, Mode, aggregate
from services.gateway.user import User

Obj = dict[str, Any]


def attributes(user: User, spec: Obj) -> Attributes:
    """kube's ResourceAttributesFrom or NonResourceAttributesFrom: which of the
    two the spec gives (the handler has checked that it gives one)."""
    given = spec.get("resourceAttributes")
    if given is None:
        other = spec.get("nonResourceAttributes") or {}
        return Attributes(user, str(other.get("verb") or ""), str(other.get("path") or ""), False)
    return Attributes(
        user,
        str(given.get("verb") or ""),
        "",
        True,
        api_group=str(given.get("group") or ""),
        # An empty version is any version.
        api_version=str(given.get("version") or "*"),
        resource=str(given.get("resource") or ""),
        subresource=str(given.get("subresource") or ""),
        namespace=str(given.get("namespace") or ""),
        name=str(given.get("name") or ""),
    )


class Reviewer:
    """The review APIs' questions, answered by authorizer (the gateway's own)."""

    def __init__(self, authorizer: Mode) -> None:
        self._authorizer = authorizer

    async def access(self, user: User, spec: Obj) -> Obj:
        """A SubjectAccessReviewStatus: whether user may do what spec says."""
        failure = ""
        try:
            decision, reason = await self._authorizer.authorize(attributes(user, spec))
        except AuthorizerError as e:
            decision, reason, failure = e.decision, e.reason, str(e)
        status: Obj = {"allowed": decision is Decision.ALLOW}
        if decision is Decision.DENY:
            status["denied"] = True
        if reason:
            status["reason"] = reason
        if failure:
            status["evaluationError"] = failure
        return status

    def rules(self, user: User, namespace: str) -> Obj:
        """A SubjectRulesReviewStatus: what user may do in namespace."""
        rules = self._authorizer.rules_for(user, namespace)
        status: Obj = {
            "resourceRules": rules.resource,
            "nonResourceRules": rules.non_resource,
            "incomplete": rules.incomplete,
        }
        if rules.errors:
            status["evaluationError"] = aggregate(rules.errors)
        return status
