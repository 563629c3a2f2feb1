"""What the RBAC end-to-end tests share: a system whose gateway enforces RBAC,
with static-token users alice (in group devs) and bob (in none), the roles and
bindings the tests grant (as recorded against kube-apiserver v1.36), and kubectl
and kube's 403 Status as those tests use them."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from strata.dev import System

TOKENS = 'alice-token,alice,u-alice,"devs"\nbob-token,bob,u-bob\n'

GRANTS = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: limited, namespace: default}
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  resourceNames: ["allowed"]
  verbs: ["get", "update", "delete"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["list", "watch"]
- apiGroups: ["apps"]
  resources: ["*/scale"]
  verbs: ["get", "patch", "update"]
- apiGroups: ["apps"]
  resources: ["deployments/*"]
  verbs: ["get"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["*"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-limited, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: limited}
subjects: [{kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: url-reader}
rules:
- nonResourceURLs: ["/metrics", "/logs/*"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: devs-url-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: url-reader}
subjects: [{kind: Group, name: devs, apiGroup: rbac.authorization.k8s.io}]
"""


def rbac_system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    """A started system whose gateway enforces RBAC, for a module-scoped fixture."""
    home: Path = tmp_path_factory.mktemp("rbac-home")
    (home / "tokens.csv").write_text(TOKENS)
    env = {
        "STRATA_TOKEN_AUTH_FILE": str(home / "tokens.csv"),
        "STRATA_AUTHORIZATION_MODE": "RBAC",
    }
    system = System(home, gateway_port=0, env=env)
    system.start()
    yield system
    system.stop()


def _kubeconfig(system: System, user: str) -> Path:
    assert system.endpoints is not None
    path = system.home / f"{user}.kubeconfig"
    ca = base64.b64encode(system.ca_file.read_bytes()).decode()
    cluster = {"server": system.endpoints.gateway, "certificate-authority-data": ca}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "s", "cluster": cluster}],
                "users": [{"name": user, "user": {"token": f"{user}-token"}}],
                "contexts": [
                    {"name": "c", "context": {"cluster": "s", "user": user, "namespace": "default"}}
                ],
            }
        )
    )
    return path


def kubectl(
    kubeconfig: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "KUBECONFIG": ""},
        timeout=60,
        check=False,
    )


def _status(error: ApiException) -> tuple[int, Any]:
    return error.status, json.loads(error.body or "")


def _forbidden(message: str, details: dict[str, str]) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }
