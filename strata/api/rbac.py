"""rbac.authorization.k8s.io/v1 PolicyRules as kube's rbac helpers read them
(pkg/apis/rbac/v1/evaluation_helpers.go and
pkg/registry/rbac/validation/policy_comparator.go): whether a rule allows a
request, a rule broken down into one verb, group, resource and name each,
whether some rules cover others, and the missing rules written as kube's
escalation refusals write them.

Shared because more than one service reads rules: the gateway's RBAC
authorizer decides with Rule.allows_* on every request (a rule is compiled
once, into sets, when its role is seen), and the registry's bootstrap
reconciles kube's default roles with covers(), and its escalation checks
(services/registry/builtin/rbac_escalation.py) use covers() and compact().
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

Obj = dict[str, Any]
ALL = "*"


def _strings(rule: Obj, key: str) -> tuple[str, ...]:
    return tuple(str(v) for v in rule.get(key) or ())


@dataclass(frozen=True, slots=True)
class Rule:
    """One PolicyRule, compiled for matching (kube's RuleAllows)."""

    verbs: frozenset[str]
    groups: frozenset[str]
    resources: frozenset[str]
    # "*/<subresource>" entries, by subresource.
    any_resource_subresources: frozenset[str]
    names: frozenset[str]
    urls: frozenset[str]
    # Prefixes of the URLs that end in "*" (their stars trimmed).
    url_prefixes: tuple[str, ...]
    all_verbs: bool
    all_groups: bool
    all_resources: bool

    @classmethod
    def of(cls, rule: Obj) -> Rule:
        verbs, groups = frozenset(_strings(rule, "verbs")), frozenset(_strings(rule, "apiGroups"))
        resources = frozenset(_strings(rule, "resources"))
        urls = frozenset(_strings(rule, "nonResourceURLs"))
        return cls(
            verbs=verbs,
            groups=groups,
            resources=resources,
            any_resource_subresources=frozenset(
                r[2:] for r in resources if r.startswith("*/") and len(r) > 2
            ),
            names=frozenset(_strings(rule, "resourceNames")),
            urls=urls,
            url_prefixes=tuple(u.rstrip("*") for u in urls if u.endswith("*")),
            all_verbs=ALL in verbs,
            all_groups=ALL in groups,
            all_resources=ALL in resources,
        )

    def allows_resource(
        self, verb: str, group: str, resource: str, subresource: str, name: str
    ) -> bool:
        """kube's RuleAllows for a resource request (resource without its subresource)."""
        if not (self.all_verbs or verb in self.verbs):
            return False
        if not (self.all_groups or group in self.groups):
            return False
        if not self.all_resources:
            combined = f"{resource}/{subresource}" if subresource else resource
            if combined not in self.resources and not (
                subresource and subresource in self.any_resource_subresources
            ):
                return False
        return not self.names or name in self.names

    def allows_path(self, verb: str, path: str) -> bool:
        """kube's RuleAllows for a request to any other path."""
        if not (self.all_verbs or verb in self.verbs):
            return False
        if ALL in self.urls or path in self.urls:
            return True
        return any(path.startswith(prefix) for prefix in self.url_prefixes)


def compile_rules(rules: Iterable[Obj] | None) -> tuple[Rule, ...]:
    return tuple(Rule.of(r or {}) for r in rules or ())


def breakdown(rule: Obj) -> list[Obj]:
    """kube's BreakdownRule: one rule per group, resource, verb (and name), then
    one per URL and verb."""
    names = _strings(rule, "resourceNames")
    subrules: list[Obj] = []
    for group in _strings(rule, "apiGroups"):
        for resource in _strings(rule, "resources"):
            for verb in _strings(rule, "verbs"):
                base: Obj = {"verbs": [verb], "apiGroups": [group], "resources": [resource]}
                if names:
                    subrules.extend({**base, "resourceNames": [n]} for n in names)
                else:
                    subrules.append(base)
    for url in _strings(rule, "nonResourceURLs"):
        subrules.extend(
            {"verbs": [verb], "nonResourceURLs": [url]} for verb in _strings(rule, "verbs")
        )
    return subrules


def _resources_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if ALL in owned:
        return True
    for resource in wanted:
        if resource in owned:
            continue
        if "/" not in resource:
            return False
        if "*/" + resource.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owner: str, url: str) -> bool:
    return owner == url or (owner.endswith("*") and url.startswith(owner.rstrip("*")))


def _rule_covers(owner: Obj, sub: Obj) -> bool:
    """kube's ruleCovers: owner allows everything the broken-down sub does."""
    verbs, groups = _strings(owner, "verbs"), _strings(owner, "apiGroups")
    owned_names, names = _strings(owner, "resourceNames"), _strings(sub, "resourceNames")
    urls = _strings(owner, "nonResourceURLs")
    return (
        (ALL in verbs or set(_strings(sub, "verbs")) <= set(verbs))
        and (ALL in groups or set(_strings(sub, "apiGroups")) <= set(groups))
        and _resources_cover(_strings(owner, "resources"), _strings(sub, "resources"))
        and (not owned_names or (bool(names) and set(names) <= set(owned_names)))
        and all(any(_url_covers(o, u) for o in urls) for u in _strings(sub, "nonResourceURLs"))
    )


def covers(owner: Sequence[Obj], servant: Iterable[Obj]) -> tuple[bool, list[Obj]]:
    """kube's Covers: whether owner's rules allow all that servant's do, and the
    broken-down servant rules they do not."""
    uncovered = [
        sub
        for rule in servant
        for sub in breakdown(rule)
        if not any(_rule_covers(o, sub) for o in owner)
    ]
    return not uncovered, uncovered


def _simple_key(rule: Obj) -> tuple[str, str, str | None] | None:
    """kube's isSimpleResourceRule: one group, one resource, at most one name
    and nothing else; the key its verbs are gathered under."""
    names = _strings(rule, "resourceNames")
    groups, resources = _strings(rule, "apiGroups"), _strings(rule, "resources")
    if len(names) > 1 or rule.get("nonResourceURLs") or len(groups) != 1 or len(resources) != 1:
        return None
    if set(rule) - {"verbs", "apiGroups", "resources", "resourceNames"}:
        return None
    return groups[0], resources[0], names[0] if names else None


def compact(rules: Iterable[Obj]) -> list[Obj]:
    """kube's CompactRules: rules that name one group and resource (and name)
    and differ only in verbs, made one; the others as they are."""
    compacted: list[Obj] = []
    simple: dict[tuple[str, str, str | None], Obj] = {}
    for rule in rules:
        key = _simple_key(rule)
        if key is None:
            compacted.append(rule)
        elif key in simple:
            simple[key]["verbs"] = [*simple[key].get("verbs", []), *_strings(rule, "verbs")]
        else:
            simple[key] = {k: list(v) for k, v in rule.items()}
    return [*compacted, *simple.values()]


def go_strings(values: Iterable[str]) -> str:
    """A []string as Go's %q writes it: ["a" "b"]."""
    return "[" + " ".join(orjson.dumps(str(v)).decode() for v in values) + "]"


def compact_string(rule: Obj) -> str:
    """kube's CompactString, as escalation refusals list missing rules."""
    parts = [
        f"{label}:{go_strings(_strings(rule, key))}"
        for label, key in (
            ("APIGroups", "apiGroups"),
            ("Resources", "resources"),
            ("NonResourceURLs", "nonResourceURLs"),
            ("ResourceNames", "resourceNames"),
            ("Verbs", "verbs"),
        )
        if rule.get(key)
    ]
    return "{" + ", ".join(parts) + "}"
