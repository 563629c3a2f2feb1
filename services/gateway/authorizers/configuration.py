"""kube's structured authorization configuration (--authorization-config:
apiserver.config.k8s.io AuthorizationConfiguration, v1, v1beta1 or v1alpha1),
read strictly and checked as kube checks it, every problem in kube's words:
the authorizers in order, each a type and a name; a Webhook's timeout, review
versions, failure policy, connection (a kubeconfig file), cache TTLs and CEL
match conditions (conditions.py). What it gives is the chain modes.py builds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from services.gateway.authorizers import Decision
from services.gateway.authorizers.conditions import MAX_CONDITIONS, Conditions
from services.gateway.authorizers.webhook import WebhookOptions, go_duration
from services.gateway.field_errors import Problems
from strata import service
from strata.api import names

GROUP = "apiserver.config.k8s.io"
VERSIONS = ("v1", "v1beta1", "v1alpha1")
KIND = "AuthorizationConfiguration"
# The types kube knows (upstream's list), and those that may repeat.
TYPES = ("ABAC", "AlwaysAllow", "AlwaysDeny", "Node", "RBAC", "Webhook")
REPEATABLE = frozenset({"Webhook"})
FAILURE_POLICIES = {"NoOpinion": Decision.NO_OPINION, "Deny": Decision.DENY}
CONNECTIONS = ("InClusterConfig", "KubeConfigFile")
_LOAD = "failed to load AuthorizationConfiguration from file: "
# The fields each part of the file may have (the file is decoded strictly).
_AUTHORIZER_FIELDS = frozenset({"type", "name", "webhook"})
_WEBHOOK_FIELDS = frozenset(
    {
        "authorizedTTL",
        "cacheAuthorizedRequests",
        "unauthorizedTTL",
        "cacheUnauthorizedRequests",
        "timeout",
        "subjectAccessReviewVersion",
        "matchConditionSubjectAccessReviewVersion",
        "failurePolicy",
        "connectionInfo",
        "matchConditions",
    }
)
# v1's defaults for a TTL not given (or 0).
DEFAULT_AUTHORIZED_TTL = 300.0
DEFAULT_UNAUTHORIZED_TTL = 30.0
MAX_TIMEOUT = 30.0


class ConfigError(ValueError):
    """A configuration kube would refuse, in the words kube-apiserver exits with."""


@dataclass(frozen=True)
class Authorizer:
    type: str
    name: str
    webhook: WebhookOptions | None = None


# --- reading the file strictly ------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """YAML whose repeated keys are an error, as kube's strict decoding has them."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise ConfigError(
                f"{_LOAD}strict decoding error: yaml: unmarshal errors:\n"
                f'  line {key_node.start_mark.line + 1}: key "{key}" already set in map'
            )
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def _unknown(obj: dict[str, Any]) -> list[str]:
    """The paths of the fields AuthorizationConfiguration does not have."""
    found = [k for k in obj if k not in ("apiVersion", "kind", "authorizers")]
    for i, given in enumerate(obj.get("authorizers") or []):
        if not isinstance(given, dict):
            continue
        at = f"authorizers[{i}]"
        found += [f"{at}.{k}" for k in given if k not in _AUTHORIZER_FIELDS]
        webhook = given.get("webhook")
        if isinstance(webhook, dict):
            found += [f"{at}.webhook.{k}" for k in webhook if k not in _WEBHOOK_FIELDS]
            info = webhook.get("connectionInfo")
            if isinstance(info, dict):
                found += [
                    f"{at}.webhook.connectionInfo.{k}"
                    for k in info
                    if k not in ("type", "kubeConfigFile")
                ]
            for j, condition in enumerate(webhook.get("matchConditions") or []):
                if isinstance(condition, dict):
                    found += [
                        f"{at}.webhook.matchConditions[{j}].{k}"
                        for k in condition
                        if k != "expression"
                    ]
    return found


def read(text: str) -> dict[str, Any]:
    """The file's object, decoded as strictly as kube decodes it (ConfigError)."""
    try:
        obj = yaml.load(text, Loader=_StrictLoader) or {}  # a SafeLoader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise ConfigError(f"{_LOAD}yaml: {line}{getattr(e, 'problem', e)}") from None
    if not isinstance(obj, dict):
        raise ConfigError(f"{_LOAD}couldn't get version/kind; json parse error")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not api_version:
        raise ConfigError(f"{_LOAD}Object 'apiVersion' is missing in '{text}'")
    if kind != KIND or api_version not in {f"{GROUP}/{v}" for v in VERSIONS}:
        raise ConfigError(
            f'{_LOAD}no kind "{kind}" is registered for version "{api_version}" in scheme '
            '"pkg/apis/apiserver/load/load.go:32"'
        )
    unknown = _unknown(obj)
    if unknown:
        listed = ", ".join(f'unknown field "{path}"' for path in unknown)
        raise ConfigError(f"{_LOAD}strict decoding error: {listed}")
    return obj


# --- checking it ---------------------------------------------------------------------


def _seconds(value: Any) -> float:
    """A metav1.Duration's seconds ("3s", "1m30s", "-1s"; absent is 0)."""
    if value is None or value == 0:
        return 0.0
    try:
        return service.parse_duration(str(value), go=True)
    except ValueError:
        raise ConfigError(f'{_LOAD}time: invalid duration "{value}"') from None


def _ttl(given: dict[str, Any], key: str, at: str, default: float, problems: Problems) -> float:
    seconds = _seconds(given.get(key))
    if seconds < 0:
        problems.invalid(f"{at}.{key}", go_duration(seconds), "must be > 0s")
    return seconds or default


def _connection(info: Any, at: str, problems: Problems) -> Path | None:
    info = info if isinstance(info, dict) else {}
    kind, file = info.get("type") or "", info.get("kubeConfigFile")
    path = f"{at}.connectionInfo.kubeConfigFile"
    if not kind:
        problems.required(f"{at}.connectionInfo.type")
    elif kind == "InClusterConfig":
        if file is not None:
            problems.invalid(path, file, "can only be set when type=KubeConfigFile")
    elif kind == "KubeConfigFile":
        if not file:
            problems.required(path)
        elif not os.path.isabs(file):
            problems.invalid(path, file, "must be an absolute path")
        elif not os.path.exists(file):
            problems.invalid(
                path, file, f"error loading file: stat {file}: no such file or directory"
            )
        elif not os.path.isfile(file):
            problems.invalid(path, file, "must be a regular file")
        else:
            return Path(file)
    else:
        shown = {"Type": kind, "KubeConfigFile": file}
        problems.unsupported(f"{at}.connectionInfo.type", shown, CONNECTIONS)
    return None


def _webhook(given: dict[str, Any], at: str, name: str, problems: Problems) -> WebhookOptions:
    """kube's ValidateWebhookConfiguration (its paths are the authorizer's)."""
    timeout = _seconds(given.get("timeout"))
    if timeout == 0:
        problems.required(f"{at}.timeout")
    elif not 0 < timeout <= MAX_TIMEOUT:
        problems.invalid(f"{at}.timeout", go_duration(timeout), "must be > 0s and <= 30s")
    authorized = _ttl(given, "authorizedTTL", at, DEFAULT_AUTHORIZED_TTL, problems)
    unauthorized = _ttl(given, "unauthorizedTTL", at, DEFAULT_UNAUTHORIZED_TTL, problems)
    version = given.get("subjectAccessReviewVersion") or ""
    if not version:
        problems.required(f"{at}.subjectAccessReviewVersion")
    elif version not in ("v1", "v1beta1"):
        problems.unsupported(f"{at}.subjectAccessReviewVersion", version, ("v1", "v1beta1"))
    conditions = given.get("matchConditions") or []
    condition_version = given.get("matchConditionSubjectAccessReviewVersion") or ""
    where = f"{at}.matchConditionSubjectAccessReviewVersion"
    if not condition_version:
        if conditions:
            problems.required(where, "required if match conditions are specified")
    elif condition_version != "v1":
        problems.unsupported(where, condition_version, ("v1",))
    policy = given.get("failurePolicy") or ""
    if not policy:
        problems.required(f"{at}.failurePolicy")
    elif policy not in FAILURE_POLICIES:
        problems.unsupported(f"{at}.failurePolicy", policy, tuple(FAILURE_POLICIES))
    config_file = _connection(given.get("connectionInfo"), at, problems)
    if len(conditions) > MAX_CONDITIONS:
        problems.too_many(f"{at}.matchConditions", len(conditions), MAX_CONDITIONS)
        compiled = Conditions(())
    else:
        compiled = Conditions.compile(conditions, f"{at}.matchConditions", problems)
    info = given.get("connectionInfo")
    in_cluster = isinstance(info, dict) and info.get("type") == "InClusterConfig"
    return WebhookOptions(
        None if in_cluster else config_file or Path(),
        version or "v1",
        authorized_ttl=authorized,
        unauthorized_ttl=unauthorized,
        timeout=timeout or MAX_TIMEOUT,
        decision_on_error=FAILURE_POLICIES.get(policy, Decision.NO_OPINION),
        conditions=compiled,
        cache_authorized=given.get("cacheAuthorizedRequests") is not False,
        cache_unauthorized=given.get("cacheUnauthorizedRequests") is not False,
        name=name,
    )


def _name(given: dict[str, Any], at: str, seen: set[str], problems: Problems) -> str:
    name = str(given.get("name") or "")
    if not name:
        problems.required(f"{at}.name")
    elif name in seen:
        problems.duplicate(f"{at}.name", name)
    elif errors := names.dns1123_subdomain_errors(name):
        detail = "authorizer name is invalid: " + ", ".join(errors)
        problems.invalid(f"{at}.name", name, detail)
    seen.add(name)
    return name


def parse(obj: dict[str, Any]) -> tuple[Authorizer, ...]:
    """The authorizers obj configures, in order (ConfigError with all kube finds)."""
    problems = Problems()
    given_list = obj.get("authorizers") or []
    if not given_list:
        problems.required("authorizers", "at least one authorization mode must be defined")
    types: set[str] = set()
    seen_names: set[str] = set()
    configured: list[Authorizer] = []
    for i, given in enumerate(given_list):
        at, given = f"authorizers[{i}]", given if isinstance(given, dict) else {}
        kind = str(given.get("type") or "")
        if not kind:
            problems.required(f"{at}.type")
            continue
        if kind not in TYPES:
            problems.unsupported(f"{at}.type", kind, TYPES)
            continue
        if kind in types and kind not in REPEATABLE:
            problems.duplicate(f"{at}.type", kind)
            continue
        types.add(kind)
        name = _name(given, at, seen_names, problems)
        webhook = None
        if kind == "Webhook":
            if given.get("webhook") is None:
                problems.required(f"{at}.webhook", "required when type=Webhook")
                continue
            webhook = _webhook(given["webhook"] or {}, at, name, problems)
        elif given.get("webhook") is not None:
            problems.invalid(f"{at}.webhook", "non-null", "may only be specified when type=Webhook")
        configured.append(Authorizer(kind, name, webhook))
    if problems.found:
        raise ConfigError(problems.aggregate())
    _check_names(configured)
    return tuple(configured)


def _check_names(configured: list[Authorizer]) -> None:
    """kube's names for the types that are not webhooks: their own, lowercased."""
    wrong = [
        f"expected name {a.type.lower()} for authorizer {a.type} instead of {a.name}"
        for a in configured
        if a.type != "Webhook" and a.name != a.type.lower()
    ]
    if wrong:
        raise ConfigError(wrong[0] if len(wrong) == 1 else "[" + ", ".join(wrong) + "]")


def read_file(path: Path) -> bytes:
    """The file's bytes (ConfigError in kube's words when it cannot be read)."""
    try:
        return path.read_bytes()
    except OSError as e:
        reason = (e.strerror or str(e)).lower()
        raise ConfigError(f"open {path}: {reason}") from None


def authorizers_of(data: bytes) -> tuple[Authorizer, ...]:
    """The authorizers a file's bytes configure (ConfigError in kube's words)."""
    return parse(read(data.decode(errors="replace")))


def load(path: Path) -> tuple[Authorizer, ...]:
    """The authorizers the file at path configures (ConfigError in kube's words)."""
    return authorizers_of(read_file(path))
