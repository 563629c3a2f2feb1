"""strata.client's credentials against a gateway configured to accept each:
a bearer token, a token file, a client certificate, an exec credential plugin
and an in-cluster service account (a token-auth-file lists the tokens, strata's
CA signs the certificate). Each is who the gateway says it is (a
SelfSubjectReview, as `kubectl auth whoami` asks), and an unknown token is 401."""

from __future__ import annotations

import base64
import json
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes

from services.gateway.pki import issue_client_certificate
from strata.client import Config, RestClient, Unauthorized, in_cluster, load_kubeconfig
from strata.dev import System

TOKENS = """\
alice-token,alice,u-alice,"dev,ops"
bob-token,bob,u-bob
carol-token,carol,u-carol
dave-token,system:serviceaccount:apps:robot,u-dave
"""


@pytest.fixture(scope="module")
def own_system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    home: Path = tmp_path_factory.mktemp("credentials-home")
    (home / "tokens.csv").write_text(TOKENS)
    system = System(home, gateway_port=0, env={"STRATA_TOKEN_AUTH_FILE": str(home / "tokens.csv")})
    system.start()
    yield system
    system.stop()


def kubeconfig(system: System, directory: Path, user: dict[str, Any]) -> Path:
    assert system.endpoints is not None
    ca = base64.b64encode(system.ca_file.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "test",
        "clusters": [
            {
                "name": "strata",
                "cluster": {"server": system.endpoints.gateway, "certificate-authority-data": ca},
            }
        ],
        "users": [{"name": "someone", "user": user}],
        "contexts": [{"name": "test", "context": {"cluster": "strata", "user": "someone"}}],
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


async def whoami(config: Config) -> dict[str, Any]:
    async with RestClient(config) as rest:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        answer = await rest.request(
            "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=review
        )
    info: dict[str, Any] = answer["status"]["userInfo"]
    return info


async def test_every_kind_of_credential_is_accepted(
    own_system: System, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = load_kubeconfig([kubeconfig(own_system, tmp_path / "t", {"token": "alice-token"})])
    assert await whoami(token) == {
        "username": "alice",
        "uid": "u-alice",
        "groups": ["dev", "ops", "system:authenticated"],
    }

    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "token").write_text("bob-token\n")
    file = load_kubeconfig([kubeconfig(own_system, tmp_path / "bob", {"tokenFile": "token"})])
    assert (await whoami(file))["username"] == "bob"

    cert, key = issue_client_certificate(own_system.home / "pki", "erin", ("admins",))
    user = {
        "client-certificate-data": base64.b64encode(cert).decode(),
        "client-key-data": base64.b64encode(key).decode(),
    }
    certificate = load_kubeconfig([kubeconfig(own_system, tmp_path / "c", user)])
    # kube names the certificate in the user's extra: its SHA-256.
    fingerprint = x509.load_pem_x509_certificate(cert).fingerprint(hashes.SHA256()).hex()
    assert await whoami(certificate) == {
        "username": "erin",
        "groups": ["admins", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/credential-id": [f"X509SHA256={fingerprint}"]},
    }

    plugin = tmp_path / "e" / "creds.sh"
    plugin.parent.mkdir()
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": "carol-token", "expirationTimestamp": "2999-01-01T00:00:00Z"},
    }
    seen = tmp_path / "e" / "exec-info.json"
    plugin.write_text(
        f"#!/bin/sh\nprintf '%s' \"$KUBERNETES_EXEC_INFO\" > {seen}\n"
        f"echo '{json.dumps(credential)}'\n"
    )
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    exec_user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "./creds.sh",
            "provideClusterInfo": True,
        }
    }
    plugged = load_kubeconfig([kubeconfig(own_system, tmp_path / "e", exec_user)])
    assert (await whoami(plugged))["username"] == "carol"
    info = json.loads(seen.read_text())
    assert info["kind"] == "ExecCredential"
    assert info["spec"]["cluster"]["server"] == plugged.server

    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("dave-token")
    (account / "ca.crt").write_bytes(own_system.ca_file.read_bytes())
    (account / "namespace").write_text("apps")
    assert own_system.endpoints is not None
    port = own_system.endpoints.gateway.rsplit(":", 1)[1]
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    pod = in_cluster(account)
    assert pod.namespace == "apps"
    assert (await whoami(pod))["username"] == "system:serviceaccount:apps:robot"

    stranger = load_kubeconfig([kubeconfig(own_system, tmp_path / "x", {"token": "nobody"})])
    with pytest.raises(Unauthorized):
        await whoami(stranger)


def test_kubectl_auth_whoami(own_system: System) -> None:
    answer = subprocess.run(
        ["kubectl", "--kubeconfig", str(own_system.kubeconfig), "auth", "whoami", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    info = json.loads(answer.stdout)["status"]["userInfo"]
    assert info["username"] == "strata-admin"
    assert info["groups"] == ["system:masters", "system:authenticated"]
