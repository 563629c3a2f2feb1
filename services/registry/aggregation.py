"""ClusterRole aggregation (kube's clusterrole-aggregation controller): a
ClusterRole with an aggregationRule gets, as its rules, the rules of every other
ClusterRole its selectors match, in name order, each rule once. Direct changes
to such a role's rules are overwritten on the next round.
"""

from __future__ import annotations

from typing import Any

import grpc
import orjson

from services.registry import rounds
from services.registry.informed import Informed
from services.registry.store import Store
from strata import telemetry
from strata.api.errors import StatusError
from strata.api.selectors import from_label_selector

INTERVAL_SECONDS = 0.5

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
    def __init__(
        self, registry: grpc.aio.Channel, cluster_roles: Store, interval: float = INTERVAL_SECONDS
    ) -> None:
        self._cluster_roles = cluster_roles
        self._informed = Informed(registry, cluster_roles.resource)
        self._interval = interval

    async def run(self) -> None:
        try:
            await rounds.every(self._interval, "clusterrole aggregation", self.aggregate_once)
        finally:
            await self._informed.stop()

    async def aggregate_once(self) -> None:
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
                continue
            log.info("aggregated clusterrole rules", clusterrole=name, rules=len(rules))
