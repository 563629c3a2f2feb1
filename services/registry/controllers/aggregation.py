"""ClusterRole aggregation (kube's clusterrole-aggregation controller): a
ClusterRole with an aggregationRule gets, as its rules, the rules of every other
ClusterRole its selectors match, in name order, each rule once. A round runs
whenever a ClusterRole changes, so direct changes to such a role's rules are
overwritten at once.
"""

from __future__ import annotations

from typing import Any

import grpc
import orjson

from services.registry.controllers import rounds
from services.registry.controllers.informed import Informed
from services.registry.generic.store import Store
from strata import telemetry
from strata.api.errors import StatusError
from strata.api.selectors import from_label_selector

# When a round could not write every aggregate, how soon the next tries again.
RETRY_SECONDS = 0.5

log = telemetry.get_logger("strata.registry.aggregation")


def aggregated_rules(role: dict[str, Any], roles: list[dict[str, Any]]) -> list[Any]:
    """The rules role's aggregationRule makes of roles."""
    selectors = [
        from_label_selector(s or {})
        for s in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
    ]
    name = role["metadata"]["name"]
    matched = sorted(
        (
            r
            for r in roles
            if r["metadata"]["name"] != name
            and any(s.matches(r["metadata"].get("labels") or {}) for s in selectors)
        ),
        key=lambda r: str(r["metadata"]["name"]),
    )
    rules: list[Any] = []
    for other in matched:
        for rule in other.get("rules") or []:
            if rule not in rules:
                rules.append(rule)
    return rules


class ClusterRoleAggregation:
    def __init__(self, registry: grpc.aio.Channel, cluster_roles: Store) -> None:
        self._cluster_roles = cluster_roles
        self._informed = Informed(registry, cluster_roles.resource)

    async def run(self) -> None:
        try:
            await rounds.on_change(
                self._informed.changed,
                "clusterrole aggregation",
                self.aggregate_once,
                retry=RETRY_SECONDS,
            )
        finally:
            await self._informed.stop()

    async def aggregate_once(self) -> bool:
        """One round; whether every aggregate is as its rule says (a role that
        changed or went meanwhile counts: its change brings the next round)."""
        settled = True
        roles = await self._informed.objects()
        for role in roles:
            if role.get("aggregationRule") is None:
                continue
            rules = aggregated_rules(role, roles)
            if rules == (role.get("rules") or []):
                continue
            role["rules"] = rules
            name = role["metadata"]["name"]
            try:
                await self._cluster_roles.update("", name, orjson.dumps(role))
            except StatusError as e:
                # The next round tries again; the other roles go on meanwhile.
                if e.reason not in ("Conflict", "NotFound"):
                    log.warning("cannot aggregate", clusterrole=name, error=e.message)
                    settled = False
                continue
            log.info("aggregated clusterrole rules", clusterrole=name, rules=len(rules))
        return settled
