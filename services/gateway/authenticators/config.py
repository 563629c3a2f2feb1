"""kube's structured authentication configuration (--authentication-config:
apiserver.config.k8s.io AuthenticationConfiguration, v1alpha1, v1beta1 or
v1), read and checked as kube checks it: JWT issuers (url, discoveryURL,
certificateAuthority, audiences with audienceMatchPolicy), claim validation
rules of the claim/requiredValue form, claim mappings for username, groups and
uid (claim and prefix), and anonymous authentication (enabled, and the paths
it is limited to).

The CEL forms (expression, valueExpression, userValidationRules, extra) are
refused with a message that says so: strata evaluates no CEL.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from services.gateway.field_errors import Problems

GROUP = "apiserver.config.k8s.io"
VERSIONS = ("v1alpha1", "v1beta1", "v1")
KIND = "AuthenticationConfiguration"
MATCH_ANY = "MatchAny"
NO_CEL = "CEL expressions are not supported by strata"


class ConfigError(ValueError):
    """A configuration kube would refuse (every problem, in kube's field words)."""


@dataclass(frozen=True, kw_only=True)
class ClaimRule:
    claim: str
    required_value: str


@dataclass(frozen=True, kw_only=True)
class Mapping:
    """A claim a user attribute comes from, and what is put in front of it."""

    claim: str
    prefix: str = ""


@dataclass(frozen=True, kw_only=True)
class Issuer:
    url: str
    discovery_url: str = ""
    certificate_authority: str = ""
    audiences: tuple[str, ...]
    rules: tuple[ClaimRule, ...] = ()
    username: Mapping
    groups: Mapping | None = None
    uid: Mapping | None = None


@dataclass(frozen=True, kw_only=True)
class Anonymous:
    enabled: bool
    # The paths anonymous requests are taken on (None: every path).
    paths: frozenset[str] | None = None


@dataclass(frozen=True, kw_only=True)
class AuthenticationConfig:
    issuers: tuple[Issuer, ...] = ()
    anonymous: Anonymous | None = None


def _cel(obj: dict[str, Any], path: str, keys: tuple[str, ...], problems: Problems) -> None:
    for key in keys:
        if obj.get(key):
            problems.invalid(f"{path}.{key}", obj[key], NO_CEL)


def _url(value: Any, path: str, problems: Problems) -> str:
    url = str(value or "")
    if not url:
        problems.required(path)
        return url
    parts = urlsplit(url)
    if parts.scheme != "https":
        problems.invalid(path, url, "URL scheme must be https")
    if parts.username or parts.password:
        problems.invalid(path, url, "URL must not contain a username or password")
    if parts.query or parts.fragment:
        problems.invalid(path, url, "URL must not contain a query or fragment")
    return url


def _mapping(
    obj: Any, path: str, problems: Problems, *, needed: bool, prefixed: bool
) -> Mapping | None:
    obj = obj if isinstance(obj, dict) else {}
    _cel(obj, path, ("expression",), problems)
    claim = str(obj.get("claim") or "")
    if not claim:
        if needed and not obj.get("expression"):
            problems.required(path, "claim or expression is required")
        return None
    if prefixed and obj.get("prefix") is None:
        problems.required(
            f"{path}.prefix",
            "prefix is required when claim is set. It can be set to an empty string to "
            "disable prefixing",
        )
    return Mapping(claim=claim, prefix=str(obj.get("prefix") or ""))


def _rules(given: Any, path: str, problems: Problems) -> tuple[ClaimRule, ...]:
    rules: list[ClaimRule] = []
    seen: set[str] = set()
    for index, rule in enumerate(given or []):
        where = f"{path}[{index}]"
        rule = rule if isinstance(rule, dict) else {}
        _cel(rule, where, ("expression",), problems)
        claim = str(rule.get("claim") or "")
        if not claim:
            if not rule.get("expression"):
                problems.required(f"{where}.claim", "claim or expression is required")
            continue
        if claim in seen:
            problems.duplicate(f"{where}.claim", claim)
        seen.add(claim)
        rules.append(ClaimRule(claim=claim, required_value=str(rule.get("requiredValue") or "")))
    return tuple(rules)


def _issuer(given: Any, path: str, problems: Problems) -> Issuer:
    given = given if isinstance(given, dict) else {}
    issuer = given.get("issuer") if isinstance(given.get("issuer"), dict) else {}
    url = _url(issuer.get("url"), f"{path}.issuer.url", problems)
    discovery = str(issuer.get("discoveryURL") or "")
    if discovery:
        _url(discovery, f"{path}.issuer.discoveryURL", problems)
        if discovery.rstrip("/") == url.rstrip("/"):
            problems.invalid(
                f"{path}.issuer.discoveryURL", discovery, "discoveryURL must be different from URL"
            )
    audiences = tuple(str(a) for a in issuer.get("audiences") or [])
    if not audiences:
        problems.required(f"{path}.issuer.audiences", "at least one issuer.audiences is required")
    policy = issuer.get("audienceMatchPolicy") or ""
    if len(audiences) > 1 and policy != MATCH_ANY:
        problems.invalid(
            f"{path}.issuer.audienceMatchPolicy",
            policy,
            "audienceMatchPolicy must be MatchAny for multiple audiences",
        )
    mappings = given.get("claimMappings") if isinstance(given.get("claimMappings"), dict) else {}
    where = f"{path}.claimMappings"
    for key in ("extra",):
        if mappings.get(key):
            problems.invalid(f"{where}.{key}", "", NO_CEL)
    if given.get("userValidationRules"):
        problems.invalid(f"{path}.userValidationRules", "", NO_CEL)
    username = _mapping(
        mappings.get("username"), f"{where}.username", problems, needed=True, prefixed=True
    )
    return Issuer(
        url=url,
        discovery_url=discovery,
        certificate_authority=str(issuer.get("certificateAuthority") or ""),
        audiences=audiences,
        rules=_rules(given.get("claimValidationRules"), f"{path}.claimValidationRules", problems),
        username=username or Mapping(claim=""),
        groups=_mapping(
            mappings.get("groups"), f"{where}.groups", problems, needed=False, prefixed=True
        ),
        uid=_mapping(mappings.get("uid"), f"{where}.uid", problems, needed=False, prefixed=False),
    )


def _anonymous(given: Any, problems: Problems) -> Anonymous | None:
    if given is None:
        return None
    given = given if isinstance(given, dict) else {}
    enabled = bool(given.get("enabled"))
    conditions = given.get("conditions") or []
    if conditions and not enabled:
        problems.invalid(
            "anonymous.conditions", "", "enabled should be set to true when conditions are defined"
        )
    paths = frozenset(str(c.get("path") or "") for c in conditions if isinstance(c, dict))
    return Anonymous(enabled=enabled, paths=paths or None)


def parse(obj: Any, service_account_issuers: tuple[str, ...] = ()) -> AuthenticationConfig:
    """The configuration obj describes; ConfigError lists what kube would refuse."""
    if not isinstance(obj, dict):
        raise ConfigError("not an AuthenticationConfiguration")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if kind != KIND or api_version not in {f"{GROUP}/{v}" for v in VERSIONS}:
        raise ConfigError(
            f"apiVersion {api_version!r} kind {kind!r}: want {KIND} of {GROUP} "
            f"({', '.join(VERSIONS)})"
        )
    problems = Problems()
    issuers: list[Issuer] = []
    for index, given in enumerate(obj.get("jwt") or []):
        issuer = _issuer(given, f"jwt[{index}]", problems)
        if issuer.url and any(i.url == issuer.url for i in issuers):
            problems.duplicate(f"jwt[{index}].issuer.url", issuer.url)
        if issuer.url in service_account_issuers:
            problems.invalid(
                f"jwt[{index}].issuer.url",
                issuer.url,
                "URL must not overlap with disallowed issuers: "
                + "["
                + " ".join(f'"{i}"' for i in service_account_issuers)
                + "]",
            )
        issuers.append(issuer)
    anonymous = _anonymous(obj.get("anonymous"), problems)
    if problems.found:
        raise ConfigError("; ".join(problems.found))
    return AuthenticationConfig(issuers=tuple(issuers), anonymous=anonymous)


def load(path: Path, service_account_issuers: tuple[str, ...] = ()) -> AuthenticationConfig:
    try:
        obj = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(str(e)) from None
    return parse(obj, service_account_issuers)
