"""RBAC enforced, end to end, against a gateway run with --authorization-mode=RBAC:
a user with no bindings is refused with kube's 403 (kubectl and the official
client, on get, list, watch, create, delete and a non-resource URL); after a
RoleBinding and a ClusterRoleBinding the user may do exactly what the roles
grant (resourceNames, */scale, a wildcard group, nonResourceURLs with a
trailing *); and `kubectl auth can-i` (single, --list, --as) answers as kube.

Every expected answer was recorded from kube-apiserver v1.36
(../shared/kube/with_kube.sh) with the same users (alice in group devs, bob in
none), roles and objects. kube's --list shows two lines more: OpenShift's own
system:openshift:public-info-viewer role (/.well-known), which the fork that
../shared/kube is built from adds and upstream kube does not have."""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from strata.dev import System
from tests.support.rbac_system import (
    GRANTS,
    _forbidden,
    _kubeconfig,
    _status,
    kubectl,
)
from tests.support.rbac_system import rbac_system as started


@pytest.fixture(scope="module")
def rbac_system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    yield from started(tmp_path_factory)


LEASE = """
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: l1, namespace: default}
spec: {holderIdentity: alice}
"""


def _refused(verb: str, resource: str, name: str = "") -> str:
    named = f' "{name}"' if name else ""
    return (
        f'{resource}{named} is forbidden: User "alice" cannot {verb} resource '
        f'"{resource}" in API group "" in the namespace "default"'
    )


# kube's answers to alice with no bindings: (kubectl arguments, stdout, stderr, exit code).
WITHOUT_BINDINGS = [
    (
        ["get", "configmaps"],
        "",
        f"Error from server (Forbidden): {_refused('list', 'configmaps')}\n",
        1,
    ),
    (
        ["get", "configmap", "allowed"],
        "",
        f"Error from server (Forbidden): {_refused('get', 'configmaps', 'allowed')}\n",
        1,
    ),
    (
        ["create", "configmap", "x"],
        "",
        f"error: failed to create configmap: {_refused('create', 'configmaps')}\n",
        1,
    ),
    (
        ["delete", "configmap", "allowed"],
        "",
        f"Error from server (Forbidden): {_refused('delete', 'configmaps', 'allowed')}\n",
        1,
    ),
    (
        ["get", "--raw", "/metrics"],
        "",
        'Error from server (Forbidden): forbidden: User "alice" cannot get path "/metrics"\n',
        1,
    ),
    (
        ["get", "namespace", "default"],
        "",
        'Error from server (Forbidden): namespaces "default" is forbidden: User "alice" cannot '
        'get resource "namespaces" in API group "" in the namespace "default"\n',
        1,
    ),
    (["auth", "can-i", "get", "configmaps"], "no\n", "", 1),
]

_DEFAULT_URLS = """\
                                                [/.well-known/*]    []               [get]
                                                [/.well-known]      []               [get]
                                                [/api/*]            []               [get]
                                                [/api]              []               [get]
                                                [/apis/*]           []               [get]
                                                [/apis]             []               [get]
                                                [/healthz]          []               [get]
                                                [/healthz]          []               [get]
                                                [/livez]            []               [get]
                                                [/livez]            []               [get]
"""
_MORE_DEFAULT_URLS = """\
                                                [/openapi/*]        []               [get]
                                                [/openapi]          []               [get]
                                                [/readyz]           []               [get]
                                                [/readyz]           []               [get]
                                                [/version/]         []               [get]
                                                [/version/]         []               [get]
                                                [/version]          []               [get]
                                                [/version]          []               [get]
"""
_HEADER = """\
Resources                                       Non-Resource URLs   Resource Names   Verbs
"""
_SELF = """\
selfsubjectreviews.authentication.k8s.io        []                  []               [create]
selfsubjectaccessreviews.authorization.k8s.io   []                  []               [create]
selfsubjectrulesreviews.authorization.k8s.io    []                  []               [create]
"""
_URL_READER = """\
                                                [/logs/*]           []               [get]
                                                [/metrics]          []               [get]
"""
_LIMITED = (
    "*.apps/scale                                    []                  []               "
    "[get patch update]\n"
    "configmaps                                      []                  [allowed]        "
    "[get update delete]\n"
)
_LIMITED_AFTER = """\
deployments.apps/*                              []                  []               [get]
configmaps                                      []                  []               [list watch]
"""
_LEASES = """\
*.coordination.k8s.io                           []                  []               [*]
"""
# kube's `kubectl auth can-i --list` for alice (and for --as alice, who has no devs group).
LIST_WITHOUT_BINDINGS = _HEADER + _SELF + _DEFAULT_URLS + _MORE_DEFAULT_URLS
LIST = (
    _HEADER + _LEASES + _SELF + _LIMITED + _DEFAULT_URLS + _URL_READER + _MORE_DEFAULT_URLS
) + _LIMITED_AFTER
LIST_AS_ALICE = (
    _HEADER + _LEASES + _SELF + _LIMITED + _DEFAULT_URLS + _MORE_DEFAULT_URLS + _LIMITED_AFTER
)
LIST_KUBE_SYSTEM = _HEADER + _SELF + _DEFAULT_URLS + _URL_READER + _MORE_DEFAULT_URLS

# kube's `kubectl auth can-i` answers for alice once bound: (arguments, yes).
CAN_I = [
    (["get", "configmaps"], False),
    (["get", "configmaps/allowed"], True),
    (["get", "configmaps/other"], False),
    (["update", "configmaps/allowed"], True),
    (["list", "configmaps"], True),
    (["watch", "configmaps"], True),
    (["create", "configmaps"], False),
    (["delete", "configmaps/allowed"], True),
    (["get", "deployments"], False),
    # kubectl reads deployments/scale as the deployment named scale.
    (["update", "deployments/scale"], False),
    (["patch", "deployments", "--subresource=scale"], True),
    (["get", "deployments", "--subresource=status"], False),
    (["get", "leases.coordination.k8s.io"], True),
    (["delete", "leases.coordination.k8s.io/x"], True),
    (["get", "/metrics"], True),
    (["get", "/logs/x"], True),
    (["get", "/logs"], False),
    (["post", "/metrics"], False),
    (["get", "configmaps", "-n", "kube-system"], False),
    (["list", "secrets", "--all-namespaces"], False),
]
# The admin's `kubectl auth can-i ... --as ...`, as kube answers them.
CAN_I_AS = [
    (["get", "configmaps/allowed", "--as", "alice"], True),
    (["get", "configmaps/other", "--as", "alice"], False),
    (["get", "/metrics", "--as", "alice"], False),
    (["get", "/metrics", "--as", "alice", "--as-group", "devs"], True),
    (["list", "configmaps", "--as", "bob"], False),
    (["create", "leases.coordination.k8s.io", "--as", "alice"], True),
    (["create", "leases.coordination.k8s.io", "--as", "alice", "-n", "kube-system"], False),
]


def _without_openshift(listing: str) -> str:
    return "".join(line for line in listing.splitlines(True) if "/.well-known" not in line)


def test_rbac_is_enforced_as_kube_enforces_it(rbac_system: System) -> None:
    admin = rbac_system.kubeconfig
    alice = _kubeconfig(rbac_system, "alice")
    kubectl(admin, "create", "configmap", "allowed", "--from-literal=a=1")
    kubectl(admin, "create", "configmap", "other", "--from-literal=a=1")
    kubectl(admin, "create", "deployment", "web", "--image=nginx", "--replicas=1")
    for args, stdout, stderr, code in WITHOUT_BINDINGS:
        answered = kubectl(alice, *args)
        assert (answered.stdout, answered.stderr, answered.returncode) == (stdout, stderr, code)
    listed = kubectl(alice, "auth", "can-i", "--list")
    assert listed.stdout == _without_openshift(LIST_WITHOUT_BINDINGS)

    _official_client_is_refused(alice)

    applied = kubectl(admin, "apply", "-f", "-", stdin=GRANTS)
    assert applied.returncode == 0, applied.stderr
    _bound_alice_may_do_what_her_roles_grant(alice)
    for args, yes in CAN_I:
        answered = kubectl(alice, "auth", "can-i", *args)
        assert (answered.stdout, answered.returncode) == (("yes\n", 0) if yes else ("no\n", 1))
    assert kubectl(alice, "auth", "can-i", "--list").stdout == _without_openshift(LIST)
    in_kube_system = kubectl(alice, "auth", "can-i", "--list", "-n", "kube-system").stdout
    assert in_kube_system == _without_openshift(LIST_KUBE_SYSTEM)


def _official_client_is_refused(kubeconfig: Path) -> None:
    """The official client, as alice with no bindings: kube's 403 Status bodies."""
    # The official client is only partly annotated: reached through Any.
    official: Any = config
    api_client = official.new_client_from_config(config_file=str(kubeconfig))
    core: Any = client.CoreV1Api(api_client)
    watching: Any = watch
    try:
        attempts: list[tuple[Callable[[], Any], str]] = [
            (lambda: core.list_namespaced_config_map("default"), _refused("list", "configmaps")),
            (
                lambda: next(watching.Watch().stream(core.list_namespaced_config_map, "default")),
                _refused("watch", "configmaps"),
            ),
            (
                lambda: core.create_namespaced_config_map(
                    "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x"))
                ),
                _refused("create", "configmaps"),
            ),
            (
                lambda: core.delete_namespaced_config_map("allowed", "default"),
                _refused("delete", "configmaps", "allowed"),
            ),
        ]
        for attempt, message in attempts:
            with pytest.raises(ApiException) as refused:
                attempt()
            details = {"name": "allowed"} if "allowed" in message else {}
            assert _status(refused.value) == (
                403,
                _forbidden(message, {**details, "kind": "configmaps"}),
            )
        settings = api_client.configuration
        answer = api_client.call_api(
            "GET",
            settings.host + "/metrics",
            header_params={"Authorization": settings.api_key["BearerToken"]},
        )
        answer.read()
        assert (answer.status, json.loads(answer.data or b"")) == (
            403,
            _forbidden('forbidden: User "alice" cannot get path "/metrics"', {}),
        )
    finally:
        api_client.close()


SCALE = '{"spec":{"replicas":2}}'


def _bound_alice_may_do_what_her_roles_grant(alice: Path) -> None:
    ok = [
        ("get", "configmap", "allowed", "-o", "name"),
        ("get", "configmaps", "-o", "name"),
        ("get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/scale"),
        ("patch", "deployment", "web", "--subresource=scale", "--type=merge", "-p", SCALE),
        ("get", "--raw", "/metrics"),
    ]
    for args in ok:
        answered = kubectl(alice, *args)
        assert answered.returncode == 0, (args, answered.stderr)
    assert kubectl(alice, "get", "configmaps", "-o", "name").stdout == (
        "configmap/allowed\nconfigmap/other\n"
    )
    assert kubectl(alice, "create", "-f", "-", "-o", "name", stdin=LEASE).stdout == (
        "lease.coordination.k8s.io/l1\n"
    )
    assert kubectl(alice, "delete", "lease", "l1").returncode == 0
    refused = [
        (("get", "configmap", "other"), _refused("get", "configmaps", "other")),
        (("delete", "configmap", "other"), _refused("delete", "configmaps", "other")),
        (
            ("get", "deployment", "web"),
            'deployments.apps "web" is forbidden: User "alice" cannot get resource '
            '"deployments" in API group "apps" in the namespace "default"',
        ),
        (
            ("get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/status"),
            'deployments.apps "web" is forbidden: User "alice" cannot get resource '
            '"deployments/status" in API group "apps" in the namespace "default"',
        ),
        (
            ("get", "configmap", "allowed", "-n", "kube-system"),
            'configmaps "allowed" is forbidden: User "alice" cannot get resource "configmaps" '
            'in API group "" in the namespace "kube-system"',
        ),
    ]
    for args, message in refused:
        answered = kubectl(alice, *args)
        assert (answered.stderr, answered.returncode) == (
            f"Error from server (Forbidden): {message}\n",
            1,
        )
    # A path the URL rule opens that nothing serves is kube's 404.
    missing = kubectl(alice, "get", "--raw", "/logs/")
    assert missing.stderr == (
        "Error from server (NotFound): the server could not find the requested resource\n"
    )
    assert kubectl(alice, "delete", "configmap", "allowed").returncode == 0


def test_can_i_as_another_user(rbac_system: System) -> None:
    """`--as` is impersonation: the admin asks on the user's behalf."""
    admin = rbac_system.kubeconfig
    applied = kubectl(admin, "apply", "-f", "-", stdin=GRANTS)
    assert applied.returncode == 0, applied.stderr
    for args, yes in CAN_I_AS:
        answered = kubectl(admin, "auth", "can-i", *args)
        assert (answered.stdout, answered.returncode) == (("yes\n", 0) if yes else ("no\n", 1))
    listed = kubectl(admin, "auth", "can-i", "--list", "--as", "alice")
    assert listed.stdout == _without_openshift(LIST_AS_ALICE)


async def test_a_stranger_is_refused_as_kube_refuses_one(rbac_system: System) -> None:
    """No credentials at all: system:anonymous, whom RBAC lets see only what
    system:public-info-viewer opens."""
    assert rbac_system.endpoints is not None
    context = ssl.create_default_context(cafile=str(rbac_system.ca_file))
    async with aiohttp.ClientSession(
        base_url=rbac_system.endpoints.gateway, connector=aiohttp.TCPConnector(ssl=context)
    ) as stranger:
        async with stranger.get("/api/v1/namespaces/default") as response:
            assert (response.status, await response.json()) == (
                403,
                _forbidden(
                    'namespaces "default" is forbidden: User "system:anonymous" cannot get '
                    'resource "namespaces" in API group "" in the namespace "default"',
                    {"name": "default", "kind": "namespaces"},
                ),
            )
        async with stranger.get("/version") as response:
            assert response.status == 200


def _object(kubeconfig: Path, *names: str) -> Any:
    """An object as kubectl gets it, once the gateway answers (a service may be
    restarting)."""
    deadline = time.monotonic() + 30
    while True:
        answered = kubectl(kubeconfig, "get", *names, "-o", "json")
        if answered.returncode == 0 or time.monotonic() > deadline:
            assert answered.returncode == 0, answered.stderr
            return json.loads(answered.stdout)
        time.sleep(0.2)


def test_the_default_policy_is_reconciled_at_start(rbac_system: System) -> None:
    """As kube's bootstrap policy: a default role or binding that lost something
    gets it back when the registry starts, and the gateway acts on it once its
    informers resume; one marked autoupdate=false is left as it is."""
    admin = rbac_system.kubeconfig
    bob = _kubeconfig(rbac_system, "bob")
    assert kubectl(bob, "auth", "can-i", "create", "selfsubjectrulesreviews").stdout == "yes\n"
    # system:basic-user loses its rules; system:monitoring too, but is protected.
    emptied = '{"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}'
    kubectl(admin, "patch", "clusterrole", "system:basic-user", "--type=merge", "-p", emptied)
    protected = '{"metadata": {"annotations": {"rbac.authorization.kubernetes.io/autoupdate": "false"}}, "rules": []}'  # noqa: E501
    kubectl(admin, "patch", "clusterrole", "system:monitoring", "--type=merge", "-p", protected)
    refused = kubectl(bob, "auth", "can-i", "create", "selfsubjectrulesreviews").stderr
    assert 'User "bob" cannot create resource "selfsubjectaccessreviews"' in refused
    rbac_system.restart("registry")
    restored = _object(admin, "clusterrole", "system:basic-user")
    assert restored["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectrulesreviews"],
            "verbs": ["create"],
        },
        {
            "apiGroups": ["authentication.k8s.io"],
            "resources": ["selfsubjectreviews"],
            "verbs": ["create"],
        },
    ]
    monitoring = _object(admin, "clusterrole", "system:monitoring")
    assert "rules" not in monitoring
    # The gateway's informers see the restored role once their watch resumes.
    deadline = time.monotonic() + 30
    while kubectl(bob, "auth", "can-i", "create", "selfsubjectrulesreviews").stdout != "yes\n":
        assert time.monotonic() < deadline
        time.sleep(0.2)
