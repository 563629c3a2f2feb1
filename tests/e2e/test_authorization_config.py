"""--authorization-config end to end: a gateway whose authorizers are a structured
AuthorizationConfiguration (kube's apiserver.config.k8s.io/v1) of two webhooks
with match conditions, then RBAC. A real HTTPS webhook on loopback allows alice
in one namespace; a webhook nobody listens for guards another, and a request
there that RBAC does not allow is kube's plain-text 500; elsewhere the
conditions skip both and RBAC refuses with kube's 403. A change of the file is
taken up while the gateway runs, and a broken one is not.

kube-apiserver v1.36 answered the same (../shared/kube, recorded): the 500's
Content-Type and body ("Internal Server Error: "<path>": Post "<url>?timeout=3s":
dial tcp ...: connect: connection refused"), the skip, and the reload."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from strata.dev import System
from tests.support.authorization_config import configuration, webhook_settings
from tests.support.tls import make_certificates

TOKENS = 'alice-token,alice,u-alice,"devs"\n'


class _Hook(BaseHTTPRequestHandler):
    """The webhook: allows alice whatever she asks in namespace hooked."""

    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        spec = review["spec"]
        namespace = (spec.get("resourceAttributes") or {}).get("namespace")
        allowed = spec["user"] == "alice" and namespace == "hooked"
        body = json.dumps({**review, "status": {"allowed": allowed}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kubeconfig(path: Path, server: str, ca: Path) -> Path:
    cluster = {"server": server, "certificate-authority": str(ca)}
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "hook", "cluster": cluster}],
                "users": [{"name": "gateway", "user": {}}],
                "contexts": [{"name": "c", "context": {"cluster": "hook", "user": "gateway"}}],
                "current-context": "c",
            }
        )
    )
    return path


def _webhook(name: str, kubeconfig: Path, namespace: str) -> dict[str, Any]:
    return {
        "type": "Webhook",
        "name": name,
        "webhook": webhook_settings(
            kubeconfig,
            matchConditions=[
                {"expression": "has(request.resourceAttributes)"},
                {"expression": f"request.resourceAttributes.namespace == '{namespace}'"},
            ],
        ),
    }


def _write_config(path: Path, *authorizers: dict[str, Any]) -> None:
    path.write_text(configuration(*authorizers))


@pytest.fixture(scope="module")
def hook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    """The live webhook (its directory, with ca.crt) and the port of a dead one."""
    directory = tmp_path_factory.mktemp("hook")
    make_certificates(directory)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(directory / "server.crt", directory / "server.key")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _kubeconfig(
        directory / "live.kubeconfig",
        f"https://127.0.0.1:{server.server_port}/authorize",
        directory / "ca.crt",
    )
    dead = _free_port()
    _kubeconfig(
        directory / "dead.kubeconfig", f"https://127.0.0.1:{dead}/authorize", directory / "ca.crt"
    )
    yield directory, dead
    server.shutdown()
    server.server_close()


def _get(system: System, path: str, token: str) -> tuple[int, str, str]:
    """(status, Content-Type, body) of a GET as token's user."""
    assert system.endpoints is not None
    context = ssl.create_default_context(cafile=str(system.ca_file))
    request = urllib.request.Request(
        system.endpoints.gateway + path, headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, context=context, timeout=30) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read().decode()


def _eventually(check: Any, seconds: float = 15.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def test_a_structured_configuration_decides(
    hook: tuple[Path, int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    directory, dead = hook
    home = tmp_path_factory.mktemp("authz-config-home")
    (home / "tokens.csv").write_text(TOKENS)
    config = home / "authz.yaml"
    _write_config(
        config,
        _webhook("guard.example.com", directory / "dead.kubeconfig", "guarded"),
        _webhook("hook.example.com", directory / "live.kubeconfig", "hooked"),
        {"type": "RBAC", "name": "rbac"},
    )
    env = {
        "STRATA_TOKEN_AUTH_FILE": str(home / "tokens.csv"),
        "STRATA_AUTHORIZATION_CONFIG": str(config),
    }
    system = System(home, gateway_port=0, env=env)
    system.start()
    try:
        alice = "alice-token"
        assert _get(system, "/api/v1/namespaces/hooked/configmaps", alice)[0] == 200
        status, kind, body = _get(system, "/api/v1/namespaces/default/configmaps", alice)
        assert (status, kind) == (403, "application/json")
        assert json.loads(body)["message"] == (
            'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API '
            'group "" in the namespace "default"'
        )
        guarded = "/api/v1/namespaces/guarded/configmaps?limit=5"
        assert _get(system, guarded, alice) == (
            500,
            "text/plain; charset=utf-8",
            f'Internal Server Error: "{guarded}": Post "https://127.0.0.1:{dead}/authorize'
            f'?timeout=3s": dial tcp 127.0.0.1:{dead}: connect: connection refused\n',
        )
        assert _get(system, guarded, system.admin_token)[0] == 200

        # A broken file is not taken up; a good one is, while the gateway runs.
        config.write_text("authorizers: [")
        time.sleep(2)
        assert _get(system, "/api/v1/namespaces/hooked/configmaps", alice)[0] == 200
        _write_config(config, {"type": "AlwaysAllow", "name": "alwaysallow"})
        allowed = _eventually(lambda: _get(system, guarded, alice)[0] == 200)
        assert allowed
    finally:
        system.stop()


def test_the_config_and_the_mode_flags_exclude_each_other(tmp_path: Path) -> None:
    config = tmp_path / "authz.yaml"
    _write_config(config, {"type": "RBAC", "name": "rbac"})
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "services.gateway",
            f"--home={tmp_path}",
            f"--authorization-config={config}",
            "--authorization-mode=RBAC",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode != 0
    assert ran.stderr.strip().endswith(
        "--authorization-config can not be specified when --authorization-mode or "
        "--authorization-webhook-* flags are defined"
    )
