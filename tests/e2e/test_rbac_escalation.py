"""RBAC's escalation prevention, end to end with kubectl and the official
client: a user who may create Roles and bindings may not grant through them
what they do not hold (unless given `escalate` or `bind`), may not set an
aggregationRule without holding everything, and is refused in kube's words,
listing the permissions missing; a change of only what the garbage collector
changes is let through; an impersonated user is checked as themselves.

Every expected answer was recorded from kube-apiserver v1.36
(../shared/kube/with_kube.sh) with the same users (alice in group devs),
roles and requests. (The controller manager was not running, so kube's
aggregated ClusterRoles were empty there as they are not here: none is used.)"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from strata.dev import System
from tests.support.rbac_system import _forbidden, _kubeconfig, _status, kubectl
from tests.support.rbac_system import rbac_system as started


@pytest.fixture(scope="module")
def rbac_system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    yield from started(tmp_path_factory)


GROUP = "rbac.authorization.k8s.io"
ALICE = 'user "alice" (groups=["devs" "system:authenticated"])'
NOT_HELD = "is attempting to grant RBAC permissions not currently held:\n"
SECRETS_GET = '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}'
SECRETS_RULE = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}

# What kube answered alice, who may create, update, patch and get Roles and
# RoleBindings in esc and get and list configmaps there: (kubectl arguments, what
# stderr says, or None for a success).
REFUSALS: list[tuple[tuple[str, ...], str | None]] = [
    (
        ("create", "role", "big", "--verb=get,list,delete", "--resource=configmaps,secrets"),
        f'Error from server (Forbidden): roles.{GROUP} "big" is forbidden: {ALICE} {NOT_HELD}'
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "delete"]}\n',
    ),
    (("create", "role", "small", "--verb=get", "--resource=configmaps"), None),
    (("create", "role", "named", "--verb=get", "--resource=configmaps", "--resource-name=a"), None),
    (("create", "rolebinding", "b1", "--role=cmreader", "--user=bob"), None),
    (
        ("create", "rolebinding", "b2", "--role=secretreader", "--user=bob"),
        f'error: failed to create rolebinding: rolebindings.{GROUP} "b2" is forbidden: '
        f"{ALICE} {NOT_HELD}{SECRETS_GET}\n",
    ),
    (
        ("create", "rolebinding", "b3", "--role=nosuch", "--user=bob"),
        f'error: failed to create rolebinding: rolebindings.{GROUP} "nosuch" not found\n',
    ),
    (
        ("create", "rolebinding", "b5", "--clusterrole=nosuchcr", "--user=bob"),
        f'error: failed to create rolebinding: rolebindings.{GROUP} "nosuchcr" not found\n',
    ),
    (
        ("patch", "role", "small", "--type=merge", "-p", json.dumps({"rules": [SECRETS_RULE]})),
        f'Error from server (Forbidden): roles.{GROUP} "small" is forbidden: '
        f"{ALICE} {NOT_HELD}{SECRETS_GET}\n",
    ),
    # A Role alice could not make: a label is not hers to add, a finalizer is.
    (
        ("patch", "role", "big2", "--type=merge", "-p", '{"metadata":{"labels":{"a":"b"}}}'),
        f'Error from server (Forbidden): roles.{GROUP} "big2" is forbidden: '
        f"{ALICE} {NOT_HELD}{SECRETS_GET}\n",
    ),
    (
        ("patch", "role", "big2", "--type=merge", "-p", '{"metadata":{"finalizers":["x.io/y"]}}'),
        None,
    ),
]


# What the admin makes before alice tries.
ESC_GRANTS: list[tuple[str, ...]] = [
    ("create", "namespace", "esc"),
    (
        "-n",
        "esc",
        "create",
        "role",
        "rolewriter",
        *("--verb=create,update,patch,get",),
        "--resource=roles,rolebindings",
    ),
    ("-n", "esc", "create", "role", "cmreader", "--verb=get,list", "--resource=configmaps"),
    ("-n", "esc", "create", "role", "secretreader", "--verb=get", "--resource=secrets"),
    ("-n", "esc", "create", "role", "big2", "--verb=get", "--resource=secrets"),
    ("-n", "esc", "create", "rolebinding", "alice-rw", "--role=rolewriter", "--user=alice"),
    ("-n", "esc", "create", "rolebinding", "alice-pr", "--role=cmreader", "--user=alice"),
]
ESCALATE_AND_BIND: list[tuple[str, ...]] = [
    ("-n", "esc", "create", "role", "escbind", "--verb=escalate,bind", "--resource=roles"),
    ("-n", "esc", "create", "rolebinding", "alice-eb", "--role=escbind", "--user=alice"),
]


def _as_admin(admin: Path, commands: list[tuple[str, ...]]) -> None:
    for args in commands:
        done = kubectl(admin, *args)
        assert done.returncode == 0, done.stderr


def _role(name: str, rules: list[dict[str, Any]], **metadata: Any) -> str:
    return json.dumps(
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Role",
            "metadata": {"name": name, **metadata} if name else metadata,
            "rules": rules,
        }
    )


def test_nobody_grants_what_they_do_not_hold(rbac_system: System) -> None:
    admin = rbac_system.kubeconfig
    alice = _kubeconfig(rbac_system, "alice")
    _as_admin(admin, ESC_GRANTS)
    for args, refused in REFUSALS:
        answered = kubectl(alice, "-n", "esc", *args, "-o", "name")
        if refused is None:
            assert answered.returncode == 0, (args, answered.stderr)
        else:
            assert (answered.stderr, answered.returncode) == (refused, 1), args

    # Escalation is refused before the object is validated, as kube refuses it.
    bad = _role("Bad_Name", [SECRETS_RULE])
    answered = kubectl(alice, "-n", "esc", "create", "-f", "-", stdin=bad)
    assert answered.stderr == (
        f'Error from server (Forbidden): error when creating "STDIN": roles.{GROUP} "Bad_Name" '
        f"is forbidden: {ALICE} {NOT_HELD}{SECRETS_GET}\n"
    )
    # A generated name is not drawn yet: the refusal names no object.
    generated = _role("", [SECRETS_RULE], generateName="gen-")
    answered = kubectl(alice, "-n", "esc", "create", "-f", "-", stdin=generated)
    assert answered.stderr == (
        f'Error from server (Forbidden): error when creating "STDIN": roles.{GROUP} '
        f"is forbidden: {ALICE} {NOT_HELD}{SECRETS_GET}\n"
    )
    applied = kubectl(
        alice,
        "-n",
        "esc",
        "apply",
        "--server-side",
        "-f",
        "-",
        stdin=_role("applied", [SECRETS_RULE]),
    )
    assert applied.stderr == (
        f'Error from server (Forbidden): roles.{GROUP} "applied" is forbidden: '
        f"{ALICE} {NOT_HELD}{SECRETS_GET}\n"
    )
    # An impersonated user is checked as who they are made to be.
    impersonated = kubectl(
        admin,
        "--as",
        "alice",
        "-n",
        "esc",
        "create",
        "role",
        "big2x",
        "--verb=get",
        "--resource=secrets",
    )
    assert impersonated.stderr == (
        f'Error from server (Forbidden): roles.{GROUP} "big2x" is forbidden: user "alice" '
        f'(groups=["system:authenticated"]) {NOT_HELD}{SECRETS_GET}\n'
    )
    assert "big" not in kubectl(admin, "-n", "esc", "get", "roles", "-o", "name").stdout.split("/")

    # escalate and bind on roles let alice grant what she does not hold.
    _as_admin(admin, ESCALATE_AND_BIND)
    for args in (
        ("create", "role", "big", "--verb=get,list,delete", "--resource=configmaps,secrets"),
        ("create", "rolebinding", "b2", "--role=secretreader", "--user=bob"),
    ):
        answered = kubectl(alice, "-n", "esc", *args, "-o", "name")
        assert answered.returncode == 0, answered.stderr


NONRES = {
    "apiVersion": f"{GROUP}/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "nonres"},
    "rules": [
        {"nonResourceURLs": ["/healthz", "/metrics"], "verbs": ["get", "post"]},
        {"apiGroups": ["apps", ""], "resources": ["deployments", "pods"], "verbs": ["get", "list"]},
        {
            "apiGroups": [""],
            "resources": ["pods"],
            "resourceNames": ["a", "b"],
            "verbs": ["delete"],
        },
    ],
}
# kube's list of what alice lacks of NONRES (she holds GET /healthz by the
# default policy): compacted, then sorted.
NONRES_MISSING = (
    '{APIGroups:[""], Resources:["deployments"], Verbs:["get" "list"]}\n'
    '{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["delete"]}\n'
    '{APIGroups:[""], Resources:["pods"], ResourceNames:["b"], Verbs:["delete"]}\n'
    '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}\n'
    '{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}\n'
    '{APIGroups:["apps"], Resources:["pods"], Verbs:["get" "list"]}\n'
    '{NonResourceURLs:["/healthz"], Verbs:["post"]}\n'
    '{NonResourceURLs:["/metrics"], Verbs:["get"]}\n'
    '{NonResourceURLs:["/metrics"], Verbs:["post"]}'
)
CLUSTER_GRANTS: list[tuple[str, ...]] = [
    ("create", "namespace", "esc2"),
    ("-n", "esc2", "create", "role", "rolewriter", "--verb=create", "--resource=rolebindings"),
    ("-n", "esc2", "create", "rolebinding", "alice-rw", "--role=rolewriter", "--user=alice"),
    (
        "create",
        "clusterrole",
        "crwriter",
        "--verb=create,update,patch",
        "--resource=clusterroles,clusterrolebindings",
    ),
    ("create", "clusterrolebinding", "alice-crw", "--clusterrole=crwriter", "--user=alice"),
]


def _binding(kind: str, name: str, role_kind: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": kind,
        "metadata": {"name": name},
        "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role},
        "subjects": [{"kind": "User", "name": "bob", "apiGroup": GROUP}],
    }


def _status_of(call: Callable[[], Any]) -> tuple[int, Any]:
    with pytest.raises(ApiException) as refused:
        call()
    return _status(refused.value)


def test_kube_status_for_each_refusal(rbac_system: System) -> None:
    """The official client gets kube's Status bodies: 403 for an escalation and
    for an aggregationRule, kube's 404 for a binding to a missing role (the
    binding's resource, the role's name), 400 for a ClusterRoleBinding to a
    Role, and a bare 500 for a role reference of no known kind."""
    admin = rbac_system.kubeconfig
    _as_admin(admin, CLUSTER_GRANTS)
    official: Any = config
    api_client = official.new_client_from_config(config_file=str(_kubeconfig(rbac_system, "alice")))
    rbac: Any = client.RbacAuthorizationV1Api(api_client)
    try:
        aggregated = {**NONRES, "metadata": {"name": "agg"}, "rules": []}
        aggregated["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}
        nonres_refused = f"{ALICE} {NOT_HELD}{NONRES_MISSING}"
        missing = _binding("RoleBinding", "b3", "Role", "nosuch")
        to_role = _binding("ClusterRoleBinding", "cb6", "Role", "x")
        blah = _binding("RoleBinding", "b7", "Blah", "x")
        assert _status_of(lambda: rbac.create_cluster_role(aggregated)) == (
            403,
            _forbidden(
                f'clusterroles.{GROUP} "agg" is forbidden: must have cluster-admin privileges '
                "to use the aggregationRule",
                {"name": "agg", "group": GROUP, "kind": "clusterroles"},
            ),
        )
        assert _status_of(lambda: rbac.create_cluster_role(NONRES)) == (
            403,
            _forbidden(
                f'clusterroles.{GROUP} "nonres" is forbidden: {nonres_refused}',
                {"name": "nonres", "group": GROUP, "kind": "clusterroles"},
            ),
        )
        assert _status_of(lambda: rbac.create_namespaced_role_binding("esc2", missing)) == (
            404,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": f'rolebindings.{GROUP} "nosuch" not found',
                "reason": "NotFound",
                "details": {"name": "nosuch", "group": GROUP, "kind": "rolebindings"},
                "code": 404,
            },
        )
        assert _status_of(lambda: rbac.create_cluster_role_binding(to_role)) == (
            400,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "Namespace parameter required.",
                "reason": "BadRequest",
                "code": 400,
            },
        )
        assert _status_of(lambda: rbac.create_namespaced_role_binding("esc2", blah)) == (
            500,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": 'unsupported role reference kind: "Blah"',
                "code": 500,
            },
        )
    finally:
        api_client.close()
