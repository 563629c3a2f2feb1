"""rbac.authorization.k8s.io/v1 Roles, ClusterRoles, RoleBindings and
ClusterRoleBindings: kube's defaults and field rules (pkg/apis/rbac/validation)
and their Table columns. They are stored and checked here; enforcing them is
the authorizer's business.

Their declarations (`Resource`s) are here too; services/registry/builtin/resources.py
gathers them.
"""

from __future__ import annotations

from typing import Any

from services.registry.builtin import kind_schemas
from services.registry.generic.declarations import (
    AGE_COLUMN,
    CREATED_AT_COLUMN,
    NAME_COLUMN,
    Column,
    Resource,
)
from services.registry.generic.strategy import (
    Obj,
    Strategy,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api import names
from strata.api.causes import invalid_value, not_supported, required
from strata.api.errors import Cause

GROUP = "rbac.authorization.k8s.io"
SUBJECT_KINDS = ("ServiceAccount", "User", "Group")


def _rule_types(kind: str) -> tuple[tuple[str, str, str], ...]:
    return (
        ("rules", kind, "[]v1.PolicyRule"),
        *(
            (f"rules[].{field}", "PolicyRule", "[]string")
            for field in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")
        ),
        *(
            (f"rules[].{field}[]", "PolicyRule", "string")
            for field in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")
        ),
    )


def _binding_types(kind: str) -> tuple[tuple[str, str, str], ...]:
    return (
        ("roleRef", kind, "v1.RoleRef"),
        *((f"roleRef.{f}", "RoleRef", "string") for f in ("apiGroup", "kind", "name")),
        ("subjects", kind, "[]v1.Subject"),
        *(
            (f"subjects[].{f}", "Subject", "string")
            for f in ("kind", "apiGroup", "name", "namespace")
        ),
    )


def validate_policy_rule(rule: Obj, namespaced: bool, at: str) -> list[Cause]:
    causes = []
    if not rule.get("verbs"):
        causes.append(required(f"{at}.verbs", "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            detail = "namespaced rules cannot apply to non-resource URLs"
            causes.append(invalid_value(f"{at}.nonResourceURLs", urls, detail))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            detail = "rules cannot apply to both regular resources and non-resource URLs"
            causes.append(invalid_value(f"{at}.nonResourceURLs", urls, detail))
        return causes
    if not rule.get("apiGroups"):
        detail = "resource rules must supply at least one api group"
        causes.append(required(f"{at}.apiGroups", detail))
    if not rule.get("resources"):
        causes.append(
            required(f"{at}.resources", "resource rules must supply at least one resource")
        )
    return causes


def _validate_rules(obj: Obj, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(obj.get("rules") or []):
        causes.extend(validate_policy_rule(rule or {}, namespaced, f"rules[{i}]"))
    return causes


def _meta_causes(obj: Obj, namespaced: bool) -> list[Cause]:
    return validate_object_meta(
        obj, namespaced=namespaced, name_is_label=False, name_errors=names.path_segment_errors
    )


class RoleStrategy:
    namespaced = True
    go_types = _rule_types("Role")

    def prepare_for_create(self, obj: Obj) -> None:
        pass

    def validate(self, obj: Obj) -> list[Cause]:
        return _meta_causes(obj, True) + _validate_rules(obj, True)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        pass

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return self.validate(obj) + validate_object_meta_update(obj, old)


_AGGREGATION_TYPES = (
    ("aggregationRule", "ClusterRole", "v1.AggregationRule"),
    ("aggregationRule.clusterRoleSelectors", "AggregationRule", "[]v1.LabelSelector"),
)


class ClusterRoleStrategy:
    namespaced = False
    go_types = _rule_types("ClusterRole") + _AGGREGATION_TYPES

    def prepare_for_create(self, obj: Obj) -> None:
        pass

    def validate(self, obj: Obj) -> list[Cause]:
        causes = _meta_causes(obj, False) + _validate_rules(obj, False)
        aggregation = obj.get("aggregationRule")
        if aggregation is not None:
            at = "aggregationRule.clusterRoleSelectors"
            selectors = aggregation.get("clusterRoleSelectors") or []
            if not selectors:
                detail = "at least one clusterRoleSelector required if aggregationRule is non-nil"
                causes.append(required(at, detail))
            for i, selector in enumerate(selectors):
                causes.extend(validate_label_selector(selector or {}, f"{at}[{i}]"))
        return causes

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        pass

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return self.validate(obj) + validate_object_meta_update(obj, old)


def _default_binding(obj: Obj) -> None:
    """rbac/v1's defaults: the roleRef's group, and each subject's by its kind."""
    role_ref = obj.get("roleRef")
    if isinstance(role_ref, dict) and not role_ref.get("apiGroup"):
        role_ref["apiGroup"] = GROUP
    for subject in obj.get("subjects") or []:
        if isinstance(subject, dict) and not subject.get("apiGroup"):
            if subject.get("kind") in ("User", "Group"):
                subject["apiGroup"] = GROUP
            elif subject.get("kind") == "ServiceAccount":
                subject["apiGroup"] = ""


def validate_subject(subject: Obj, namespaced: bool, at: str) -> list[Cause]:
    causes = []
    name, kind = subject.get("name", ""), subject.get("kind", "")
    group = subject.get("apiGroup", "")
    if not name:
        causes.append(required(f"{at}.name"))
    if kind == "ServiceAccount":
        if name:
            causes.extend(
                invalid_value(f"{at}.name", name, e) for e in names.dns1123_subdomain_errors(name)
            )
        if group:
            causes.append(not_supported(f"{at}.apiGroup", group, ("",)))
        if not namespaced and not subject.get("namespace"):
            causes.append(required(f"{at}.namespace"))
    elif kind in ("User", "Group"):
        if group != GROUP:
            causes.append(not_supported(f"{at}.apiGroup", group, (GROUP,)))
    else:
        causes.append(not_supported(f"{at}.kind", kind, SUBJECT_KINDS))
    return causes


class BindingStrategy:
    """RoleBindings (which may name a Role or a ClusterRole) and
    ClusterRoleBindings (a ClusterRole only); roleRef never changes."""

    def __init__(self, kind: str, namespaced: bool, role_kinds: tuple[str, ...]) -> None:
        self._kind = kind
        self.namespaced = namespaced
        self._role_kinds = role_kinds
        self.go_types = _binding_types(kind)

    def prepare_for_create(self, obj: Obj) -> None:
        _default_binding(obj)

    def validate(self, obj: Obj) -> list[Cause]:
        causes = _meta_causes(obj, self.namespaced)
        role_ref: dict[str, Any] = obj.get("roleRef") or {}
        group = role_ref.get("apiGroup", "")
        if group != GROUP:
            causes.append(not_supported("roleRef.apiGroup", group, (GROUP,)))
        kind = role_ref.get("kind", "")
        if kind not in self._role_kinds:
            causes.append(not_supported("roleRef.kind", kind, self._role_kinds))
        name = role_ref.get("name", "")
        if not name:
            causes.append(required("roleRef.name"))
        else:
            causes.extend(
                invalid_value("roleRef.name", name, e) for e in names.path_segment_errors(name)
            )
        for i, subject in enumerate(obj.get("subjects") or []):
            causes.extend(validate_subject(subject or {}, self.namespaced, f"subjects[{i}]"))
        return causes

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        _default_binding(obj)

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        causes = self.validate(obj) + validate_object_meta_update(obj, old)
        if obj.get("roleRef") != old.get("roleRef"):
            causes.append(invalid_value("roleRef", obj.get("roleRef"), "cannot change roleRef"))
        return causes


def role_cell(obj: Obj) -> str:
    """A binding's Role cell: Kind/name."""
    role_ref = obj.get("roleRef") or {}
    return f"{role_ref.get('kind', '')}/{role_ref.get('name', '')}"


def subjects_cell(kind: str) -> Any:
    """A binding's Users, Groups or ServiceAccounts cell (kube's SubjectsStrings)."""

    def cell(obj: Obj) -> str:
        shown = []
        for subject in obj.get("subjects") or []:
            if subject.get("kind") != kind:
                continue
            name = subject.get("name", "")
            namespace = subject.get("namespace", "") if kind == "ServiceAccount" else ""
            shown.append(f"{namespace}/{name}" if namespace else name)
        return ", ".join(shown)

    return cell


def _rbac(
    name: str, kind: str, strategy: Strategy, columns: tuple[Column, ...], schema: Obj
) -> Resource:
    return Resource(
        schema=schema,
        group=GROUP,
        version="v1",
        name=name,
        singular=kind.lower(),
        kind=kind,
        namespaced=strategy.namespaced,
        strategy=strategy,
        columns=columns,
    )


def _binding_columns(role_ref: str, scope: str) -> tuple[Column, ...]:
    """kube's columns for RoleBindings and ClusterRoleBindings."""
    return (
        NAME_COLUMN,
        Column(name="Role", type="string", description=role_ref, cell=role_cell),
        AGE_COLUMN,
        *(
            Column(
                name=title,
                type="string",
                priority=1,
                description=f"{title} in the {scope}",
                cell=subjects_cell(kind),
            )
            for title, kind in (
                ("Users", "User"),
                ("Groups", "Group"),
                ("ServiceAccounts", "ServiceAccount"),
            )
        ),
    )


_IMMUTABLE_REF = (
    "If the RoleRef cannot be resolved, the Authorizer must return an error. This field is "
    "immutable."
)
ROLES = _rbac("roles", "Role", RoleStrategy(), (NAME_COLUMN, CREATED_AT_COLUMN), kind_schemas.ROLE)
CLUSTER_ROLES = _rbac(
    "clusterroles",
    "ClusterRole",
    ClusterRoleStrategy(),
    (NAME_COLUMN, CREATED_AT_COLUMN),
    kind_schemas.CLUSTER_ROLE,
)
ROLE_BINDINGS = _rbac(
    "rolebindings",
    "RoleBinding",
    BindingStrategy("RoleBinding", True, ("Role", "ClusterRole")),
    _binding_columns(
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
        f"namespace. {_IMMUTABLE_REF}",
        "roleBinding",
    ),
    kind_schemas.ROLE_BINDING,
)
CLUSTER_ROLE_BINDINGS = _rbac(
    "clusterrolebindings",
    "ClusterRoleBinding",
    BindingStrategy("ClusterRoleBinding", False, ("ClusterRole",)),
    _binding_columns(
        f"RoleRef can only reference a ClusterRole in the global namespace. {_IMMUTABLE_REF}",
        "clusterRoleBinding",
    ),
    kind_schemas.CLUSTER_ROLE_BINDING,
)
