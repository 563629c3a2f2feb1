"""kube's audit policy (`audit.k8s.io/v1` Policy, the file --audit-policy-file
names): which requests are audited, at which level and at which stages. Rules
are tried in order and the first that matches decides, as kube's policy
evaluator does; a request no rule matches is not audited.

Read and checked once at start (a policy kube would refuse stops the gateway);
evaluated for every request by the audit step (services/gateway/chain/audit.py)
against the request's authorizer attributes, so a rule's verbs, resources and
paths mean what they mean to RBAC."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from services.gateway.authorizers import Attributes
from services.gateway.user import User
from strata.api.goquote import quote

API_VERSION = "audit.k8s.io/v1"

REQUEST_RECEIVED = "RequestReceived"
RESPONSE_STARTED = "ResponseStarted"
RESPONSE_COMPLETE = "ResponseComplete"
PANIC = "Panic"
STAGES = (REQUEST_RECEIVED, RESPONSE_STARTED, RESPONSE_COMPLETE, PANIC)


class Level(enum.IntEnum):
    """How much of a request an event holds; each level holds all of the one
    before it."""

    NONE = 0
    METADATA = 1
    REQUEST = 2
    REQUEST_RESPONSE = 3

    @property
    def word(self) -> str:
        """The level as the policy and the events spell it."""
        return _WORDS[self]


_WORDS = {
    Level.NONE: "None",
    Level.METADATA: "Metadata",
    Level.REQUEST: "Request",
    Level.REQUEST_RESPONSE: "RequestResponse",
}
_LEVELS = {word: level for level, word in _WORDS.items()}
# kube's IsDNS1123Subdomain, for a rule's API group.
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class PolicyError(Exception):
    """A policy file kube would not load; the message says where and why."""


@dataclass(frozen=True)
class GroupResources:
    group: str = ""
    # Empty: every resource of the group.
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    level: Level
    users: tuple[str, ...] = ()
    user_groups: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ()
    resources: tuple[GroupResources, ...] = ()
    namespaces: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()
    omit_stages: tuple[str, ...] = ()
    # None: the policy's.
    omit_managed_fields: bool | None = None


@dataclass(frozen=True)
class RequestConfig:
    """What the policy says of one request (kube's RequestAuditConfig)."""

    level: Level
    omit_stages: frozenset[str] = frozenset()
    omit_managed_fields: bool = False


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...]
    omit_stages: tuple[str, ...] = ()
    omit_managed_fields: bool = False

    def evaluate(self, attributes: Attributes, user: User | None) -> RequestConfig:
        """The first matching rule's level; user is None for a request that
        failed authentication (only rules naming no users or groups match it).
        The stages omitted are the policy's and the rule's together."""
        for rule in self.rules:
            if _matches(rule, attributes, user):
                omit_managed_fields = (
                    self.omit_managed_fields
                    if rule.omit_managed_fields is None
                    else rule.omit_managed_fields
                )
                return RequestConfig(
                    rule.level,
                    frozenset((*self.omit_stages, *rule.omit_stages)),
                    omit_managed_fields,
                )
        return RequestConfig(Level.NONE, frozenset(self.omit_stages))


def _matches(rule: Rule, attributes: Attributes, user: User | None) -> bool:
    """kube's ruleMatches: every field the rule gives must match."""
    if rule.users and (user is None or user.name not in rule.users):
        return False
    if rule.user_groups and (
        user is None or not any(group in rule.user_groups for group in user.groups)
    ):
        return False
    if rule.verbs and attributes.verb not in rule.verbs:
        return False
    if rule.namespaces or rule.resources:
        return _matches_resource(rule, attributes)
    if rule.non_resource_urls:
        return not attributes.resource_request and any(
            _path_matches(attributes.path, spec) for spec in rule.non_resource_urls
        )
    return True


def _path_matches(path: str, spec: str) -> bool:
    """Whether spec ("*", the path itself, or a prefix ending in "*") matches."""
    return spec in ("*", path) or (spec.endswith("*") and path.startswith(spec.rstrip("*")))


def _matches_resource(rule: Rule, attributes: Attributes) -> bool:
    """kube's ruleMatchesResource: namespaces ("" for cluster-scoped
    resources), then group, resource (as "resource/subresource" for a
    subresource, with "*", "*/subresource" and "resource/*") and names."""
    if not attributes.resource_request:
        return False
    if rule.namespaces and attributes.namespace not in rule.namespaces:
        return False
    if not rule.resources:
        return True
    resource, subresource = attributes.resource, attributes.subresource
    combined = f"{resource}/{subresource}" if subresource else resource
    for spec in rule.resources:
        if spec.group != attributes.api_group:
            continue
        if not spec.resources:
            return True
        if spec.resource_names and attributes.name not in spec.resource_names:
            continue
        for wanted in spec.resources:
            if wanted in (combined, "*"):
                return True
            # Go's TrimLeft and TrimRight take a set of characters, not a prefix.
            if subresource and wanted.startswith("*/") and subresource == wanted.lstrip("*/"):
                return True
            if wanted.endswith("/*") and resource == wanted.rstrip("/*"):
                return True
    return False


def load(path: Path) -> Policy:
    """The policy in a file, checked as kube checks it (PolicyError if not)."""
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise PolicyError(f"{path}: {e}") from None
    return parse(document, str(path))


def parse(document: object, source: str = "policy") -> Policy:
    if not isinstance(document, Mapping):
        raise PolicyError(f"{source}: not a Policy object")
    if document.get("apiVersion") != API_VERSION or document.get("kind") != "Policy":
        raise PolicyError(
            f"{source}: want apiVersion {API_VERSION} and kind Policy, "
            f"got {document.get('apiVersion')!r} and {document.get('kind')!r}"
        )
    problems: list[str] = []
    omit = _stages(document.get("omitStages"), "omitStages", problems)
    rules = tuple(
        _rule(raw, f"rules[{i}]", problems) for i, raw in enumerate(document.get("rules") or ())
    )
    if problems:
        raise PolicyError(f"{source}: " + "; ".join(problems))
    if not rules:
        # kube's words for a policy that would audit nothing.
        raise PolicyError(f"loaded illegal policy with 0 rules from file {source}")
    return Policy(rules, omit, bool(document.get("omitManagedFields") or False))


def _strings(value: object, where: str, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{where}: must be a list of strings")
        return ()
    return tuple(value)


def _stages(value: object, where: str, problems: list[str]) -> tuple[str, ...]:
    stages = _strings(value, where, problems)
    for i, stage in enumerate(stages):
        if stage not in STAGES:
            problems.append(
                f"{where}[{i}]: Unsupported value: {quote(stage)}: "
                f"supported values: {_quoted(STAGES)}"
            )
    return stages


def _quoted(words: Iterable[str]) -> str:
    return ", ".join(f'"{word}"' for word in words)


def _rule(raw: object, where: str, problems: list[str]) -> Rule:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be an object")
        return Rule(Level.NONE)
    word = raw.get("level")
    level = _LEVELS.get(word) if isinstance(word, str) else None
    if level is None:
        problems.append(
            f"{where}.level: Required value"
            if not word
            else f"{where}.level: Unsupported value: "
            f"{quote(str(word))}: supported values: {_quoted(_LEVELS)}"
        )
        level = Level.NONE
    urls = _strings(raw.get("nonResourceURLs"), f"{where}.nonResourceURLs", problems)
    namespaces = _strings(raw.get("namespaces"), f"{where}.namespaces", problems)
    resources = tuple(
        _group_resources(spec, f"{where}.resources[{i}]", problems)
        for i, spec in enumerate(raw.get("resources") or ())
    )
    if urls and (resources or namespaces):
        problems.append(
            f"{where}.nonResourceURLs: Invalid value: {list(urls)}: rules cannot apply to both "
            "regular resources and non-resource URLs"
        )
    for i, url in enumerate(urls):
        if url != "*" and not url.startswith("/"):
            problems.append(
                f"{where}.nonResourceURLs[{i}]: Invalid value: {quote(url)}: "
                "non-resource URL rules must begin with a '/' character"
            )
        if "*" in url[:-1]:
            problems.append(
                f"{where}.nonResourceURLs[{i}]: Invalid value: {quote(url)}: non-resource URL "
                "wildcards '*' must be the final character of the rule"
            )
    omit_managed = raw.get("omitManagedFields")
    return Rule(
        level=level,
        users=_strings(raw.get("users"), f"{where}.users", problems),
        user_groups=_strings(raw.get("userGroups"), f"{where}.userGroups", problems),
        verbs=_strings(raw.get("verbs"), f"{where}.verbs", problems),
        resources=resources,
        namespaces=namespaces,
        non_resource_urls=urls,
        omit_stages=_stages(raw.get("omitStages"), f"{where}.omitStages", problems),
        omit_managed_fields=None if omit_managed is None else bool(omit_managed),
    )


def _group_resources(spec: Any, where: str, problems: list[str]) -> GroupResources:
    if not isinstance(spec, Mapping):
        problems.append(f"{where}: must be an object")
        return GroupResources()
    group = spec.get("group") or ""
    if not isinstance(group, str) or (group and not _SUBDOMAIN.fullmatch(group)):
        problems.append(f"{where}.group: Invalid value: {quote(str(group))}: not a DNS subdomain")
        group = ""
    resources = _strings(spec.get("resources"), f"{where}.resources", problems)
    names = _strings(spec.get("resourceNames"), f"{where}.resourceNames", problems)
    if names and not resources:
        problems.append(
            f"{where}.resourceNames: Invalid value: {list(names)}: using resourceNames requires "
            "at least one resource"
        )
    return GroupResources(group, resources, names)
