"""kube's RBAC authorizer (--authorization-mode=RBAC): a request is allowed when
a rule of a role bound to its user allows it, looking first through the
ClusterRoleBindings and then through the RoleBindings of the request's
namespace; otherwise it has no opinion, and its reason lists the roles the
bindings named that do not exist ("RBAC: role... not found"). What is bound
to whom is read from the in-memory policy (rbac_policy.py), never from
storage.

Until the policy's first lists have arrived a request waits for them, at most
SYNC_WAIT_SECONDS, so that the first requests after a start are not refused
for want of a role."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from services.gateway.authorizers import Attributes, Decision, Rules, aggregate
from services.gateway.authorizers.rbac_policy import Policy, Role
from services.gateway.user import User

SYNC_WAIT_SECONDS = 10.0


class RBAC:
    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._synced = policy.synced()

    async def _wait_synced(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._policy.wait_synced(), SYNC_WAIT_SECONDS)
        # Decided from what is there after the wait, synced or not.
        self._synced = self._policy.synced()

    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        if not self._synced:
            await self._wait_synced()
        errors = []
        verb = attributes.verb
        granted = self._policy.granted(attributes.user, attributes.namespace)
        if attributes.resource_request:
            group, resource = attributes.api_group, attributes.resource
            subresource, name = attributes.subresource, attributes.name
            for role, reason in granted:
                if not isinstance(role, Role):
                    errors.append(role)
                    continue
                by_verb = role.resource_rules
                for rule in by_verb.get(verb) or by_verb[None]:
                    if rule.allows_resource(verb, group, resource, subresource, name):
                        return Decision.ALLOW, reason
        else:
            for role, reason in granted:
                if not isinstance(role, Role):
                    errors.append(role)
                    continue
                by_verb = role.path_rules
                for rule in by_verb.get(verb) or by_verb[None]:
                    if rule.allows_path(verb, attributes.path):
                        return Decision.ALLOW, reason
        return Decision.NO_OPINION, f"RBAC: {aggregate(errors)}" if errors else ""

    def rules_for(self, user: User, namespace: str) -> Rules:
        """kube's RBAC RulesFor: every rule of every role bound to user there, a
        rule with resources as a ResourceRule and one with URLs as a NonResourceRule."""
        resource: list[dict[str, Any]] = []
        non_resource: list[dict[str, Any]] = []
        errors = []
        for role, _ in self._policy.granted(user, namespace):
            if not isinstance(role, Role):
                errors.append(role)
                continue
            for rule in role.rules:
                if rule.get("resources"):
                    entry = {"verbs": list(rule.get("verbs") or [])}
                    for key in ("apiGroups", "resources", "resourceNames"):
                        if rule.get(key):
                            entry[key] = list(rule[key])
                    resource.append(entry)
                if rule.get("nonResourceURLs"):
                    non_resource.append(
                        {
                            "verbs": list(rule.get("verbs") or []),
                            "nonResourceURLs": list(rule["nonResourceURLs"]),
                        }
                    )
        return Rules(resource, non_resource, False, tuple(errors))
