"""The compose deployment, brought up for real from the images it builds
(docker-compose.yml, deploy/Dockerfile; the stand-in base images of
deploy/containers/ where no registry can be reached): kubectl and the official
client are served with the admin token and CA it made, over the published
port; and inside its network nobody gets past the gateway: the registry
refuses a client with no certificate, storage refuses the gateway's
certificate, etcd refuses a client with no certificate, and the registry
answers the gateway.

It needs a Docker engine, which `make test` does not have: `.ci/run` starts one
(deploy/containers/engine.sh), builds the stand-in images and runs this with
STRATA_COMPOSE_TEST=1."""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    os.environ.get("STRATA_COMPOSE_TEST") != "1",
    reason="needs a Docker engine and the stand-in images: .ci/run starts one and runs this "
    "with STRATA_COMPOSE_TEST=1",
)

# Run inside the gateway's container, on the compose network, with its certificate.
PROBE = """
import asyncio, json, ssl, socket
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from strata import tls
from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc

def read(path):
    with open(path, "rb") as f:
        return f.read()

CA, CERT, KEY = read("/certs/ca.crt"), read("/certs/gateway.crt"), read("/certs/gateway.key")

def channel(service, address, *, cert=None, key=None, secure=True):
    if not secure:
        return grpc.aio.insecure_channel(address)
    credentials = grpc.ssl_channel_credentials(CA, key, cert)
    options = tls.channel_options(tls.SERVES[service][0])
    return grpc.aio.secure_channel(address, credentials, options)

async def code(call):
    try:
        await call
        return "OK"
    except grpc.aio.AioRpcError as e:
        return e.code().name

async def main():
    found = {}
    async with channel("registry", "registry:2383", secure=False) as c:
        check = health_pb2_grpc.HealthStub(c).Check(health_pb2.HealthCheckRequest(), timeout=10)
        found["registry without TLS"] = await code(check)
    async with channel("registry", "registry:2383") as c:
        check = health_pb2_grpc.HealthStub(c).Check(health_pb2.HealthCheckRequest(), timeout=10)
        found["registry without a certificate"] = await code(check)
    async with channel("registry", "registry:2383", cert=CERT, key=KEY) as c:
        check = health_pb2_grpc.HealthStub(c).Check(health_pb2.HealthCheckRequest(), timeout=10)
        found["registry with the gateway's"] = await code(check)
    async with channel("storage", "storage:2381", cert=CERT, key=KEY) as c:
        request = storage_pb2.GetRequest(key="/secrets/")
        get = storage_pb2_grpc.StorageStub(c).Get(request, timeout=10)
        found["storage with the gateway's"] = await code(get)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection(("etcd", 2379), timeout=10) as raw:
            with context.wrap_socket(raw) as wrapped:
                wrapped.sendall(b"GET /version HTTP/1.1\\r\\nHost: etcd\\r\\n\\r\\n")
                found["etcd without a certificate"] = "OK" if wrapped.recv(100) else "CLOSED"
    except (ssl.SSLError, OSError) as e:
        found["etcd without a certificate"] = "REFUSED"
    print(json.dumps(found))

asyncio.run(main())
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Compose:
    def __init__(self, project: str, port: int) -> None:
        self.project, self.port = project, port
        self.env = {
            **os.environ,
            "STRATA_PYTHON_IMAGE": os.environ.get("STRATA_PYTHON_IMAGE", "local/python:3.11"),
            "STRATA_ETCD_IMAGE": os.environ.get("STRATA_ETCD_IMAGE", "local/etcd:3.5"),
            "STRATA_GATEWAY_PORT": str(port),
        }

    def run(self, *args: str, timeout: float = 600) -> str:
        done = subprocess.run(
            ["docker", "compose", "-p", self.project, *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        assert done.returncode == 0, (args, done.stdout[-2000:], done.stderr[-2000:])
        return done.stdout


def _ready(server: str, ca: Path, seconds: float = 90) -> None:
    context = ssl.create_default_context(cafile=str(ca))
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{server}/readyz", context=context, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, "the gateway did not become ready"
        time.sleep(1)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Compose, Path]]:
    """The compose system, up, and an admin kubeconfig for it."""
    compose = Compose(f"strata-ci-{os.getpid()}", _free_port())
    home = tmp_path_factory.mktemp("compose")
    try:
        compose.run("up", "-d", "--build")
        # The serving CA is the pki step's; the admin token the gateway's, once it runs.
        ca = compose.run("exec", "-T", "gateway", "cat", "/var/lib/strata/pki/ca.crt")
        (home / "ca.crt").write_text(ca)
        server = f"https://127.0.0.1:{compose.port}"
        _ready(server, home / "ca.crt")
        token = compose.run("exec", "-T", "gateway", "cat", "/var/lib/strata/admin-token").strip()
        kubeconfig = home / "kubeconfig"
        cluster = {"server": server, "certificate-authority": str(home / "ca.crt")}
        kubeconfig.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "compose", "cluster": cluster}],
                    "users": [{"name": "admin", "user": {"token": token}}],
                    "contexts": [{"name": "c", "context": {"cluster": "compose", "user": "admin"}}],
                    "current-context": "c",
                }
            )
        )
        yield compose, kubeconfig
    finally:
        compose.run("down", "-v", "--remove-orphans", timeout=300)


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def test_kubectl_and_the_official_client_are_served(deployed: tuple[Compose, Path]) -> None:
    _, kubeconfig = deployed
    assert "default" in _kubectl(kubeconfig, "get", "namespaces", "-o", "name")
    _kubectl(kubeconfig, "create", "configmap", "compose", "--from-literal=a=1")
    got = json.loads(_kubectl(kubeconfig, "get", "configmap", "compose", "-o", "json"))
    assert got["data"] == {"a": "1"}
    from kubernetes import client, config

    official: Any = config
    api_client = official.new_client_from_config(config_file=str(kubeconfig))
    try:
        core: Any = client.CoreV1Api(api_client)
        names = [item.metadata.name for item in core.list_namespaced_config_map("default").items]
        assert "compose" in names
    finally:
        api_client.close()


def test_nobody_gets_past_the_gateway(deployed: tuple[Compose, Path]) -> None:
    compose, _ = deployed
    output = compose.run("exec", "-T", "gateway", "python", "-c", PROBE, timeout=120)
    assert json.loads(output.strip().splitlines()[-1]) == {
        "registry without TLS": "UNAVAILABLE",
        "registry without a certificate": "UNAVAILABLE",
        "registry with the gateway's": "OK",
        "storage with the gateway's": "PERMISSION_DENIED",
        "etcd without a certificate": "REFUSED",
    }
