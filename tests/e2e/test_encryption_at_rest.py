"""Encryption at rest end to end: a `make run`-style system started with
STRATA_ENCRYPTION_CONFIG, kubectl writing configmaps, the values in etcd read
back by an independent decoder, then key rotation the kube way (new key first,
restart, `kubectl replace`), `strata storage reencrypt`, and a missing key."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from strata.dev import System
from tests.support import kube_format

KEY1, KEY2, KEY3 = os.urandom(32), os.urandom(32), os.urandom(32)


def config(path: Path, *keys: tuple[str, bytes]) -> Path:
    providers = "".join(
        f"      - aesgcm:\n          keys:\n            - name: {name}\n"
        f"              secret: {base64.b64encode(secret).decode()}\n"
        for name, secret in keys
    )
    path.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
        "  - resources: [configmaps]\n    providers:\n" + providers + "      - identity: {}\n"
    )
    return path


def kubectl(
    system: System, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "KUBECONFIG": str(system.kubeconfig)},
    )


def raw(system: System, key: str) -> bytes:
    """The value etcd holds at key, read with strata's etcd client."""

    async def read() -> bytes:
        etcd = system.etcd_client()
        try:
            response = await etcd.range(key.encode())
        finally:
            await etcd.close()
        assert response.kvs, f"{key} is not in etcd"
        return bytes(response.kvs[0].value)

    return asyncio.run(read())


def start(home: Path, encryption: Path) -> System:
    system = System(home, gateway_port=0, env={"STRATA_ENCRYPTION_CONFIG": str(encryption)})
    system.start()
    return system


def test_encryption_rotation_and_reencrypt(tmp_path: Path) -> None:
    home = tmp_path / "home"
    system = start(home, config(tmp_path / "one.yaml", ("key1", KEY1)))
    try:
        assert kubectl(system, "create", "namespace", "enc").returncode == 0
        for name in ("a", "b", "c"):
            made = kubectl(
                system, "-n", "enc", "create", "configmap", name, "--from-literal=pw=hunter2"
            )
            assert made.returncode == 0, made.stderr
        stored = raw(system, "/registry/configmaps/enc/a")
        assert stored.startswith(b"k8s:enc:aesgcm:v1:key1:") and b"hunter2" not in stored
        decoded = orjson.loads(
            kube_format.decode(stored, {"key1": KEY1}, b"/registry/configmaps/enc/a")
        )
        assert decoded["data"] == {"pw": "hunter2"} and decoded["metadata"]["name"] == "a"
        # Resources the configuration does not name stay plain JSON.
        assert (raw(system, "/registry/namespaces/enc")).startswith(b"{")
    finally:
        system.stop()

    # Rotation: the new key first, the old one still listed for reading.
    rotated = config(tmp_path / "two.yaml", ("key2", KEY2), ("key1", KEY1))
    system = start(home, rotated)
    try:
        read = kubectl(system, "-n", "enc", "get", "configmap", "a", "-o", "json")
        assert json.loads(read.stdout)["data"] == {"pw": "hunter2"}
        replaced = kubectl(system, "replace", "-f", "-", stdin=read.stdout)
        assert replaced.returncode == 0, replaced.stderr
        assert (raw(system, "/registry/configmaps/enc/a")).startswith(b"k8s:enc:aesgcm:v1:key2:")
        assert (raw(system, "/registry/configmaps/enc/b")).startswith(b"k8s:enc:aesgcm:v1:key1:")

        command = subprocess.run(
            [
                sys.executable,
                "-m",
                "services.cli",
                "storage",
                "reencrypt",
                *system.etcd_flags(),
                f"--encryption-provider-config={rotated}",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert command.returncode == 0, command.stderr
        counts = dict(item.split("=") for item in command.stdout.split())
        assert counts["rewritten"] == "2" and counts["unreadable"] == "0"
        assert int(counts["scanned"]) >= 3
        for name in ("a", "b", "c"):
            value = raw(system, f"/registry/configmaps/enc/{name}")
            assert value.startswith(b"k8s:enc:aesgcm:v1:key2:")
            key = f"/registry/configmaps/enc/{name}".encode()
            assert orjson.loads(kube_format.decode(value, {"key2": KEY2}, key))["data"] == {
                "pw": "hunter2"
            }
    finally:
        system.stop()

    # A key that is no longer configured: a clear 500 naming it, never garbage.
    system = start(home, config(tmp_path / "three.yaml", ("key3", KEY3)))
    try:
        missing = kubectl(system, "-n", "enc", "get", "configmap", "a", "-o", "json")
        assert missing.returncode != 0
        assert "InternalError" in missing.stderr or "Internal error" in missing.stderr
        assert "key2" in missing.stderr
        # The configmaps cache cannot sync, and readiness says so.
        ready = kubectl(system, "get", "--raw", "/readyz?verbose")
        assert ready.returncode != 0
        assert "[-]watch-cache failed: reason withheld" in ready.stdout + ready.stderr
    finally:
        system.stop()


def test_malformed_configuration_stops_the_storage_service(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
        "  - resources: [configmaps]\n    providers:\n      - aescbc:\n          keys:\n"
        "            - name: k\n              secret: dG9vIHNob3J0\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "services.storage",
            "--etcd=127.0.0.1:1",
            f"--encryption-provider-config={bad}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert f"{bad}:9: secret of aescbc key 'k' is 9 bytes" in result.stderr


@pytest.mark.parametrize("command", [["storage"], ["storage", "reencrypt"]])
def test_reencrypt_needs_a_configuration(command: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "services.cli", *command],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "STRATA_ENCRYPTION_CONFIG"},
    )
    assert result.returncode != 0
    assert "encryption-provider-config" in result.stderr
