"""etcd as `make run` starts it (strata.dev.System) admits storage's client
certificate only: dialled directly, over gRPC or its HTTP/JSON gateway, with no
TLS, with TLS and no certificate, or with a certificate another CA signed
(strata's own gRPC CA, which every service holds one of), it refuses at the
handshake, says why in its log, and nothing is read or written; its peer port
likewise. With storage's certificate it answers.

Secrets are stored encrypted with the key of the generated
$STRATA_HOME/encryption-config.yaml (secretbox, owner-only, kept across
restarts with etcd's certificates), read back through the API, and the key is
rotated as README's "Encryption at rest" says."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import os
import re
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import orjson
import pytest
import yaml

from strata.dev import System
from strata.etcd import Etcd
from strata.proto.etcd.etcdserverpb import rpc_pb2, rpc_pb2_grpc
from tests.support import kube_format
from tests.support.readme import README
from tests.support.sessions import admin_session

REFUSED_AT_HANDSHAKE = grpc.StatusCode.UNAVAILABLE
# What etcd logs as it rejects each client ("rejected connection on client endpoint").
WHY = {
    "plain": "tls: first record does not look like a TLS handshake",
    "no certificate": "tls: client didn't provide a certificate",
    "another CA": "x509: certificate signed by unknown authority",
}
PREFIX = b"k8s:enc:secretbox:v1:key1:"


def _credentials(system: System, how: str) -> grpc.ChannelCredentials | None:
    ca = system.etcd_certificates.ca.read_bytes()
    if how == "plain":
        return None
    if how == "no certificate":
        return grpc.ssl_channel_credentials(ca)
    other = system.grpc_identity("storage")  # storage's own, for its gRPC hops
    return grpc.ssl_channel_credentials(ca, other.key, other.cert)


def _etcd_address(system: System) -> str:
    assert system.endpoints is not None
    return system.endpoints.etcd.removeprefix("https://")


def _logged(system: System, since: int, why: str) -> bool:
    """Whether etcd's log says, after byte since, that it rejected a client for why."""
    log = system.home / "logs" / "etcd.log"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(log, "rb") as f:
            f.seek(since)
            for line in f.read().decode().splitlines():
                if "rejected connection on client endpoint" in line and why in line:
                    return True
        time.sleep(0.1)
    return False


async def _failure(call: Awaitable[object]) -> grpc.StatusCode | None:
    """The code call failed with (None: it was answered). The error is not
    kept: while it lives, its channel goes on dialling etcd after closing."""
    try:
        await call
    except grpc.aio.AioRpcError as error:
        return error.code()
    return None


@pytest.mark.parametrize("how", list(WHY))
async def test_etcd_refuses_a_client_without_storage_certificate(system: System, how: str) -> None:
    address = _etcd_address(system)
    key = f"/registry/intruder-{uuid.uuid4().hex}".encode()
    since = (system.home / "logs" / "etcd.log").stat().st_size
    credentials = _credentials(system, how)
    channel = (
        grpc.aio.insecure_channel(address)
        if credentials is None
        else grpc.aio.secure_channel(address, credentials)
    )
    async with channel:
        kv = rpc_pb2_grpc.KVStub(channel)
        read = await _failure(
            kv.Range(rpc_pb2.RangeRequest(key=b"/registry/", range_end=b"/registry0"), timeout=10)
        )
        write = await _failure(kv.Put(rpc_pb2.PutRequest(key=key, value=b"x"), timeout=10))
    assert read == write == REFUSED_AT_HANDSHAKE
    assert await asyncio.to_thread(_logged, system, since, WHY[how])
    etcd = system.etcd_client()
    try:
        assert (await etcd.range(key)).count == 0
        assert (await etcd.range(b"/registry/namespaces/default")).count == 1
    finally:
        await etcd.close()


def _post(url: str, context: ssl.SSLContext | None) -> Any:
    """etcd's HTTP/JSON gateway: the range of /registry/namespaces/default."""
    body = json.dumps({"key": base64.b64encode(b"/registry/namespaces/default").decode()})
    request = urllib.request.Request(url, data=body.encode(), method="POST")
    with urllib.request.urlopen(request, context=context, timeout=10) as response:
        return json.loads(response.read())


def _refused_by_tls(call: Callable[[], object]) -> None:
    """call fails on TLS: at the handshake, or (TLS 1.3, where the client's
    handshake ends before the server has checked its certificate) on the
    server's alert as the answer is read."""
    with pytest.raises((urllib.error.URLError, ssl.SSLError)) as refused:
        call()
    error = refused.value
    assert isinstance(
        error.reason if isinstance(error, urllib.error.URLError) else error, ssl.SSLError
    )


def test_etcd_http_gateway_and_peer_port_want_a_certificate(system: System) -> None:
    certs = system.etcd_certificates
    range_url = f"https://{_etcd_address(system)}/v3/kv/range"
    without = ssl.create_default_context(cafile=str(certs.ca))
    with_cert = ssl.create_default_context(cafile=str(certs.ca))
    tls = certs.client_tls()
    assert tls.cert_file is not None and tls.key_file is not None
    with_cert.load_cert_chain(tls.cert_file, tls.key_file)

    with pytest.raises(http.client.RemoteDisconnected):
        _post(range_url.replace("https://", "http://"), None)
    _refused_by_tls(lambda: _post(range_url, without))
    assert _post(range_url, with_cert)["count"] == "1"

    peer = json.loads((system.home / "ports.json").read_text())["etcd_peer"]
    members = f"127.0.0.1:{peer}/members"
    with pytest.raises(http.client.RemoteDisconnected):
        urllib.request.urlopen(f"http://{members}", timeout=10)
    _refused_by_tls(
        lambda: urllib.request.urlopen(f"https://{members}", context=without, timeout=10)
    )


def _keys(system: System) -> dict[str, bytes]:
    """The secretbox keys of the system's EncryptionConfiguration, by name."""
    config = yaml.safe_load(system.encryption_config.read_text())
    (rule,) = config["resources"]
    assert rule["resources"] == ["secrets"] and rule["providers"][-1] == {"identity": {}}
    return {
        k["name"]: base64.b64decode(k["secret"]) for k in rule["providers"][0]["secretbox"]["keys"]
    }


async def _stored(etcd: Etcd, key: str) -> bytes:
    response = await etcd.range(key.encode())
    assert response.kvs, f"{key} is not in etcd"
    return bytes(response.kvs[0].value)


async def _create_secret(session: aiohttp.ClientSession, name: str, value: str) -> None:
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
            "data": {"password": base64.b64encode(value.encode()).decode()}}  # fmt: skip
    async with session.post("/api/v1/namespaces/default/secrets", json=body) as response:
        assert response.status == 201, await response.text()


async def _password(session: aiohttp.ClientSession, name: str) -> str:
    async with session.get(f"/api/v1/namespaces/default/secrets/{name}") as response:
        assert response.status == 200, await response.text()
        return base64.b64decode((await response.json())["data"]["password"]).decode()


async def test_secrets_are_encrypted_at_rest_by_default(
    system: System, http: aiohttp.ClientSession, system_etcd: Etcd
) -> None:
    assert system.encryption_config == system.home / "encryption-config.yaml"
    assert system.encryption_config.stat().st_mode & 0o777 == 0o600
    name, value = f"db-{uuid.uuid4().hex[:8]}", f"hunter2-{uuid.uuid4().hex}"
    await _create_secret(http, name, value)

    key = f"/registry/secrets/default/{name}"
    stored = await _stored(system_etcd, key)
    assert stored.startswith(PREFIX)
    assert value.encode() not in stored and base64.b64encode(value.encode()) not in stored
    decoded = orjson.loads(kube_format.decode(stored, _keys(system), key.encode()))
    assert decoded["metadata"]["name"] == name
    assert base64.b64decode(decoded["data"]["password"]).decode() == value
    assert await _password(http, name) == value
    # What the configuration does not name stays plain JSON.
    assert (await _stored(system_etcd, "/registry/namespaces/default")).startswith(b"{")


async def _start(home: Path) -> System:
    system = System(home, gateway_port=0)
    await asyncio.to_thread(system.start)
    return system


async def _restarted(system: System) -> System:
    """The system stopped, and started again on its home as `make run` would be."""
    await asyncio.to_thread(system.stop)
    return await _start(system.home)


def _readme_command(start: str) -> str:
    """The command README's "Encryption at rest" shows inline that begins
    with start, on one line."""
    text = README.read_text()
    section = text[text.index("### Encryption at rest\n") :]
    prose = re.sub(r"```.*?```", "", section[: section.index("\n## ")], flags=re.DOTALL)
    shown = [" ".join(c.split()) for c in re.findall(r"`([^`]+)`", prose)]
    (command,) = [c for c in shown if c.startswith(start)]
    return command


def _as_typed(system: System, command: str) -> subprocess.CompletedProcess[str]:
    """command run as a user types it: STRATA_HOME the system's home, the
    installed `strata` on PATH, and PORT etcd's, from endpoints.json."""
    etcd = json.loads((system.home / "endpoints.json").read_text())["etcd"]
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["bash", "-c", command.replace("https://127.0.0.1:PORT", etcd)],
        env={**os.environ, "STRATA_HOME": str(system.home), "PATH": path},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


SECRETBOX_KEY = "            - name: {name}\n              secret: {secret}\n"


@pytest.mark.timeout(300)
async def test_the_key_is_kept_across_restarts_and_rotated_as_the_readme_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STRATA_ENCRYPTION_CONFIG", raising=False)
    system = await _start(tmp_path / "home")
    try:
        config = system.encryption_config.read_bytes()
        pki = {p.name: p.read_bytes() for p in system.etcd_certificates.directory.iterdir()}
        async with admin_session(system) as session:
            await _create_secret(session, "kept", "hunter2")
        system = await _restarted(system)
        assert system.encryption_config.read_bytes() == config
        assert system.encryption_config.stat().st_mode & 0o777 == 0o600
        assert {p.name: p.read_bytes() for p in system.etcd_certificates.directory.iterdir()} == pki
        async with admin_session(system) as session:
            assert await _password(session, "kept") == "hunter2"

        # Rotation: a new key first, the old one still listed; restart; reencrypt.
        key1 = _keys(system)["key1"]
        made = _as_typed(system, _readme_command("head -c 32 /dev/urandom"))
        assert made.returncode == 0 and len(base64.b64decode(made.stdout)) == 32, made
        key2_line = SECRETBOX_KEY.format(name="key2", secret=made.stdout.strip())
        key1_line = SECRETBOX_KEY.format(name="key1", secret=base64.b64encode(key1).decode())
        text = system.encryption_config.read_text()
        system.encryption_config.write_text(text.replace(key1_line, key2_line + key1_line))
        system = await _restarted(system)
        reencrypt = _readme_command("strata storage reencrypt --etcd https://127.0.0.1:PORT ")
        done = await asyncio.to_thread(_as_typed, system, reencrypt)
        assert done.returncode == 0, done.stderr
        assert "unreadable=0" in done.stdout and "rewritten=0" not in done.stdout
        etcd = system.etcd_client()
        try:
            stored = await _stored(etcd, "/registry/secrets/default/kept")
        finally:
            await etcd.close()
        assert stored.startswith(b"k8s:enc:secretbox:v1:key2:")

        # The old key removed: everything is still read.
        system.encryption_config.write_text(text.replace(key1_line, key2_line))
        system = await _restarted(system)
        assert list(_keys(system)) == ["key2"]
        async with admin_session(system) as session:
            assert await _password(session, "kept") == "hunter2"
    finally:
        await asyncio.to_thread(system.stop)
