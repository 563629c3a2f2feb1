"""rbac.authorization.k8s.io/v1 through the real gateway and services: kube's
defaults and field rules as registry tester tables, ClusterRole aggregation,
the default policy the registry bootstraps, storage keys and Table columns."""

from __future__ import annotations

import uuid
from typing import Any

import aiohttp
import pytest

from strata.etcd import Etcd
from tests.support.registry_tester import (
    Case,
    Obj,
    RegistryTester,
    answer,
    invalid,
    new_namespace,
    refused,
    required,
    unsupported,
    until,
)

RBAC = "/apis/rbac.authorization.k8s.io/v1"
GROUP = "rbac.authorization.k8s.io"
RULE = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}


def role(name: str, *rules: Obj, kind: str = "Role", **fields: Any) -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": kind,
        "metadata": {"name": name},
        "rules": list(rules),
        **fields,
    }


def binding(name: str, role_ref: Obj, *subjects: Obj, kind: str = "RoleBinding") -> Obj:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": role_ref,
        "subjects": list(subjects),
    }


def rename_role(obj: Obj) -> None:
    obj["roleRef"]["name"] = "other"


ROLE_CASES = [
    Case(id="valid", body=role("reader", RULE), expect={"rules": [RULE]}),
    Case(id="no-rules", body=role("empty")),
    Case(
        id="name-path-segment",
        body=role("a%b", RULE),
        causes=(invalid("metadata.name", '"a%b"', "may not contain '%'"),),
    ),
    Case(id="name-with-colon", body=role("system:reader", RULE)),
    Case(
        id="verbs-required",
        body=role("noverbs", {"apiGroups": [""], "resources": ["pods"]}),
        causes=(required("rules[0].verbs", "verbs must contain at least one value"),),
    ),
    Case(
        id="groups-and-resources-required",
        body=role("bare", {"verbs": ["get"]}),
        causes=(
            required("rules[0].apiGroups", "resource rules must supply at least one api group"),
            required("rules[0].resources", "resource rules must supply at least one resource"),
        ),
    ),
    Case(
        id="no-urls-in-namespaced-rules",
        body=role("urls", {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}),
        causes=(
            invalid(
                "rules[0].nonResourceURLs",
                '["/healthz"]',
                "namespaced rules cannot apply to non-resource URLs",
            ),
        ),
    ),
]

CLUSTER_ROLE_CASES = [
    Case(
        id="urls",
        body=role("urls", {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}, kind="ClusterRole"),
    ),
    Case(
        id="urls-or-resources",
        body=role("both", {**RULE, "nonResourceURLs": ["/healthz"]}, kind="ClusterRole"),
        causes=(
            invalid(
                "rules[0].nonResourceURLs",
                '["/healthz"]',
                "rules cannot apply to both regular resources and non-resource URLs",
            ),
        ),
    ),
    Case(
        id="aggregation-needs-selectors",
        body=role("agg", kind="ClusterRole", aggregationRule={"clusterRoleSelectors": []}),
        causes=(
            required(
                "aggregationRule.clusterRoleSelectors",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ),
        ),
    ),
    Case(
        id="aggregation-selectors-valid",
        body=role(
            "aggbad",
            kind="ClusterRole",
            aggregationRule={
                "clusterRoleSelectors": [{"matchExpressions": [{"key": "a", "operator": "Like"}]}]
            },
        ),
        causes=(
            unsupported(
                "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator",
                '"Like"',
                "In",
                "NotIn",
                "Exists",
                "DoesNotExist",
            ),
        ),
    ),
]

ROLE_REF = {"kind": "Role", "name": "reader"}
ROLE_BINDING_CASES = [
    Case(
        id="defaults",
        body=binding(
            "defaults",
            ROLE_REF,
            {"kind": "User", "name": "jane"},
            {"kind": "Group", "name": "devs"},
            {"kind": "ServiceAccount", "name": "builder"},
        ),
        expect={
            "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "reader"},
            "subjects": [
                {"apiGroup": GROUP, "kind": "User", "name": "jane"},
                {"apiGroup": GROUP, "kind": "Group", "name": "devs"},
                {"apiGroup": "", "kind": "ServiceAccount", "name": "builder"},
            ],
        },
    ),
    Case(
        id="role-ref",
        body=binding("badref", {"apiGroup": "example.com", "kind": "Secret"}),
        causes=(
            unsupported("roleRef.apiGroup", '"example.com"', GROUP),
            unsupported("roleRef.kind", '"Secret"', "Role", "ClusterRole"),
            required("roleRef.name"),
        ),
    ),
    Case(
        id="subjects",
        body=binding(
            "badsubjects",
            ROLE_REF,
            {"kind": "Robot", "name": "r2"},
            {"kind": "ServiceAccount", "name": "Builder", "apiGroup": "v1"},
            {"kind": "User", "name": "jane", "apiGroup": "example.com"},
            {"kind": "Group"},
        ),
        causes=(
            unsupported("subjects[0].kind", '"Robot"', "ServiceAccount", "User", "Group"),
            invalid(
                "subjects[1].name",
                '"Builder"',
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ),
            unsupported("subjects[1].apiGroup", '"v1"', ""),
            unsupported("subjects[2].apiGroup", '"example.com"', GROUP),
            required("subjects[3].name"),
        ),
    ),
    Case(
        id="role-ref-immutable",
        body=binding("fixed", ROLE_REF),
        update=rename_role,
        causes=(
            invalid(
                "roleRef",
                '{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"other"}',
                "cannot change roleRef",
            ),
        ),
    ),
]

CLUSTER_ROLE_BINDING_CASES = [
    Case(
        id="cluster-role-only",
        body=binding("onlycr", ROLE_REF, kind="ClusterRoleBinding"),
        causes=(unsupported("roleRef.kind", '"Role"', "ClusterRole"),),
    ),
    Case(
        id="service-account-namespace",
        body=binding(
            "sa",
            {"kind": "ClusterRole", "name": "view"},
            {"kind": "ServiceAccount", "name": "builder"},
            kind="ClusterRoleBinding",
        ),
        causes=(required("subjects[0].namespace"),),
    ),
    Case(
        id="valid",
        body=binding(
            "viewers",
            {"kind": "ClusterRole", "name": "view"},
            {"kind": "ServiceAccount", "name": "builder", "namespace": "default"},
            kind="ClusterRoleBinding",
        ),
        expect={
            "subjects": [
                {
                    "apiGroup": "",
                    "kind": "ServiceAccount",
                    "name": "builder",
                    "namespace": "default",
                }
            ],
            "roleRef.apiGroup": GROUP,
        },
    ),
]


@pytest.fixture(scope="module")
async def namespace(http: aiohttp.ClientSession) -> str:
    return await new_namespace(http, "rbac")


# (collection under the group, kind, cases); "{ns}" is the test's namespace.
TABLES = [
    ("namespaces/{ns}/roles", "Role", ROLE_CASES),
    ("clusterroles", "ClusterRole", CLUSTER_ROLE_CASES),
    ("namespaces/{ns}/rolebindings", "RoleBinding", ROLE_BINDING_CASES),
    ("clusterrolebindings", "ClusterRoleBinding", CLUSTER_ROLE_BINDING_CASES),
]


@pytest.mark.parametrize(
    ("collection", "kind", "case"),
    [pytest.param(c, k, case, id=f"{k}-{case}") for c, k, cases in TABLES for case in cases],
)
async def test_rbac_rules(
    http: aiohttp.ClientSession,
    system_etcd: Etcd,
    namespace: str,
    collection: str,
    kind: str,
    case: Case,
) -> None:
    path = f"{RBAC}/{collection.format(ns=namespace)}"
    await RegistryTester(http, system_etcd, path, kind, GROUP).run(case)


async def test_a_rule_of_the_wrong_type_is_a_bad_request(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    body = role("typed", {**RULE, "verbs": "get"})
    status = await refused(
        http, system_etcd, "POST", f"{RBAC}/namespaces/{namespace}/roles", json=body
    )
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        'Role in version "v1" cannot be handled as a Role: json: cannot unmarshal string into '
        "Go struct field PolicyRule.rules.verbs of type []string"
    )


async def _rules_become(http: aiohttp.ClientSession, name: str, want: list[Obj]) -> None:
    """Return once a ClusterRole's rules are want."""
    path = f"{RBAC}/clusterroles/{name}"
    await until(http, path, lambda role: (role.get("rules") or []) == want, within=10)


async def test_aggregated_cluster_roles_gather_the_rules_they_select(
    http: aiohttp.ClientSession,
) -> None:
    label = f"test.strata.dev/aggregate-{uuid.uuid4().hex[:6]}"
    roles = f"{RBAC}/clusterroles"
    prefix = label.rsplit("-", 1)[1]
    read = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}
    write = {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["update"]}
    aggregate = role(
        f"{prefix}-all",
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},  # overwritten
        kind="ClusterRole",
        aggregationRule={"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]},
    )
    await answer(http, "POST", roles, 201, json=aggregate)
    await _rules_become(http, f"{prefix}-all", [])
    # In name order, each rule once; roles not selected do not count.
    second = role(f"{prefix}-b", read, write, kind="ClusterRole")
    second["metadata"]["labels"] = {label: "true"}
    await answer(http, "POST", roles, 201, json=second)
    first = role(f"{prefix}-a", write, kind="ClusterRole")
    first["metadata"]["labels"] = {label: "true"}
    await answer(http, "POST", roles, 201, json=first)
    await answer(http, "POST", roles, 201, json=role(f"{prefix}-c", RULE, kind="ClusterRole"))
    await _rules_become(http, f"{prefix}-all", [write, read])
    # A selected role's change and removal reach the aggregate.
    await answer(http, "DELETE", f"{roles}/{prefix}-a", 200)
    await answer(http, "DELETE", f"{roles}/{prefix}-b", 200)
    await _rules_become(http, f"{prefix}-all", [])


async def test_the_default_policy_is_bootstrapped(http: aiohttp.ClientSession) -> None:
    admin = await answer(http, "GET", f"{RBAC}/clusterroles/cluster-admin", 200)
    assert admin["rules"] == [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ]
    assert admin["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "rbac-defaults"}
    masters = await answer(http, "GET", f"{RBAC}/clusterrolebindings/cluster-admin", 200)
    assert masters["roleRef"] == {"apiGroup": GROUP, "kind": "ClusterRole", "name": "cluster-admin"}
    assert masters["subjects"] == [{"apiGroup": GROUP, "kind": "Group", "name": "system:masters"}]
    # edit aggregates view, admin aggregates edit: each holds the rules below it.
    rules: dict[str, list[Obj]] = {}
    for name in ("view", "edit", "admin"):
        found = await until(
            http, f"{RBAC}/clusterroles/{name}", lambda role: role.get("rules"), within=10
        )
        rules[name] = found["rules"]
    assert all(rule in rules["edit"] for rule in rules["view"])
    assert all(rule in rules["admin"] for rule in rules["edit"])
    assert not any("secrets" in r.get("resources", []) for r in rules["view"])
    assert any("secrets" in r.get("resources", []) for r in rules["edit"])
    assert any("rolebindings" in r.get("resources", []) for r in rules["admin"])


async def test_rbac_objects_are_stored_where_kube_stores_them(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    await answer(http, "POST", f"{RBAC}/namespaces/{namespace}/roles", 201, json=role("keyed"))
    assert (await system_etcd.range(f"/registry/roles/{namespace}/keyed".encode())).count == 1
    key = b"/registry/clusterroles/cluster-admin"
    assert (await system_etcd.range(key)).count == 1


async def test_binding_table_columns(http: aiohttp.ClientSession, namespace: str) -> None:
    body = binding(
        "tabled",
        {"kind": "ClusterRole", "name": "view"},
        {"kind": "User", "name": "jane"},
        {"kind": "User", "name": "joe"},
        {"kind": "Group", "name": "devs"},
        {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"},
    )
    path = f"{RBAC}/namespaces/{namespace}/rolebindings"
    await answer(http, "POST", path, 201, json=body)
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    table = await answer(http, "GET", f"{path}/tabled", 200, headers=accept)
    columns = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert columns == [
        ("Name", 0),
        ("Role", 0),
        ("Age", 0),
        ("Users", 1),
        ("Groups", 1),
        ("ServiceAccounts", 1),
    ]
    cells = table["rows"][0]["cells"]
    assert cells[:2] == ["tabled", "ClusterRole/view"]
    assert cells[3:] == ["jane, joe", "devs", "ci/builder"]
    roles = await answer(http, "GET", f"{RBAC}/clusterroles/cluster-admin", 200, headers=accept)
    assert [c["name"] for c in roles["columnDefinitions"]] == ["Name", "Created At"]
    assert roles["columnDefinitions"][1]["type"] == "date"
    created = roles["rows"][0]["cells"][1]
    assert created.endswith("Z") and "T" in created
