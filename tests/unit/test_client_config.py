"""strata.client's configuration: kubeconfig contexts, clusters and users
(inline data or files relative to the kubeconfig, tokens, token files, exec
plugins), merging several files as $KUBECONFIG does, kubectl's precedence with
in-cluster last, and Status bodies restored as typed errors."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from strata.client import (
    AlreadyExists,
    ConfigError,
    Conflict,
    Expired,
    Invalid,
    NotFound,
    TooManyRequests,
    api_error,
    in_cluster,
    load_config,
    load_kubeconfig,
    parse_warnings,
)


def kubeconfig(path: Path, **overrides: Any) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "main",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://127.0.0.1:6443/",
                    "certificate-authority": "ca.crt",
                    "proxy-url": "http://127.0.0.1:3128",
                },
            }
        ],
        "users": [
            {"name": "token", "user": {"token": "t0k"}},
            {"name": "file", "user": {"tokenFile": "token.txt"}},
            {
                "name": "cert",
                "user": {
                    "client-certificate-data": base64.b64encode(b"CERT").decode(),
                    "client-key": "client.key",
                },
            },
            {
                "name": "plugin",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": "./bin/creds",
                        "args": ["--x"],
                        "env": [{"name": "A", "value": "1"}],
                        "provideClusterInfo": True,
                    }
                },
            },
        ],
        "contexts": [
            {"name": "main", "context": {"cluster": "c", "user": "token", "namespace": "team"}},
            {"name": "files", "context": {"cluster": "c", "user": "file"}},
            {"name": "certs", "context": {"cluster": "c", "user": "cert"}},
            {"name": "exec", "context": {"cluster": "c", "user": "plugin"}},
            {"name": "broken", "context": {"cluster": "nowhere", "user": "token"}},
        ],
        **overrides,
    }
    path.mkdir(parents=True, exist_ok=True)
    (path / "ca.crt").write_bytes(b"CA")
    (path / "client.key").write_bytes(b"KEY")
    (path / "token.txt").write_text("from-file\n")
    file = path / "config"
    file.write_text(yaml.safe_dump(config))
    return file


def test_contexts_pick_cluster_user_and_namespace(tmp_path: Path) -> None:
    file = kubeconfig(tmp_path)
    main = load_kubeconfig([file])
    assert main.server == "https://127.0.0.1:6443" and main.namespace == "team"
    assert main.ca_data == b"CA" and main.token == "t0k" and main.bearer_token() == "t0k"
    assert main.proxy_url == "http://127.0.0.1:3128"
    files = load_kubeconfig([file], context="files")
    assert files.namespace == "default" and files.bearer_token() == "from-file"
    certs = load_kubeconfig([file], context="certs")
    assert (certs.client_cert_data, certs.client_key_data) == (b"CERT", b"KEY")
    plugin = load_kubeconfig([file], context="exec")
    assert plugin.exec is not None
    assert (plugin.exec.command, plugin.exec.args, plugin.exec.env) == (
        "./bin/creds",
        ("--x",),
        (("A", "1"),),
    )
    assert plugin.exec.base_dir == tmp_path and plugin.exec.provide_cluster_info
    with pytest.raises(ConfigError, match="cluster 'nowhere' is not defined"):
        load_kubeconfig([file], context="broken")
    with pytest.raises(ConfigError, match="context 'absent' is not defined"):
        load_kubeconfig([file], context="absent")


def test_kubeconfig_files_merge_first_wins(tmp_path: Path) -> None:
    first = kubeconfig(tmp_path / "one")
    second = kubeconfig(
        tmp_path / "two",
        **{
            "current-context": "other",
            "users": [{"name": "token", "user": {"token": "shadowed"}}],
            "contexts": [{"name": "other", "context": {"cluster": "c", "user": "token"}}],
        },
    )
    merged = load_kubeconfig([first, second])
    assert merged.token == "t0k" and merged.namespace == "team"  # first current-context
    other = load_kubeconfig([first, second], context="other")
    assert other.token == "t0k"  # the first file's user of that name wins


def test_precedence_explicit_then_kubeconfig_env_then_in_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = kubeconfig(tmp_path / "k")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KUBECONFIG", str(file))
    assert load_config().token == "t0k"
    assert load_config(file, context="files").bearer_token() == "from-file"
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigError, match="no configuration"):
        load_config()
    account = tmp_path / "sa"
    account.mkdir()
    (account / "token").write_text("sa-token")
    (account / "ca.crt").write_bytes(b"SA-CA")
    (account / "namespace").write_text("apps")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    config = load_config(directory=account)
    assert config.server == "https://[fd00::1]:443" and config.namespace == "apps"
    assert config.bearer_token() == "sa-token" and config.ca_data == b"SA-CA"
    with pytest.raises(ConfigError, match="no service account token"):
        in_cluster(tmp_path / "nothing")


def test_status_bodies_become_typed_errors() -> None:
    def status(code: int, reason: str, **details: Any) -> bytes:
        body = {"kind": "Status", "code": code, "reason": reason, "message": "m"}
        return orjson.dumps({**body, "details": details})

    assert isinstance(api_error(404, status(404, "NotFound")), NotFound)
    assert isinstance(api_error(409, status(409, "AlreadyExists")), AlreadyExists)
    assert isinstance(api_error(409, status(409, "Conflict")), Conflict)
    assert isinstance(api_error(410, status(410, "Expired")), Expired)
    invalid = api_error(
        422, status(422, "Invalid", causes=[{"reason": "FieldValueRequired", "field": "x"}])
    )
    assert isinstance(invalid, Invalid) and invalid.causes[0].field == "x"
    busy = api_error(429, status(429, "TooManyRequests"), {"Retry-After": "3"})
    assert isinstance(busy, TooManyRequests) and busy.retry_after_seconds == 3
    plain = api_error(404, b"404 page not found")
    assert isinstance(plain, NotFound) and plain.message == "404 page not found"


def test_warning_headers_are_unquoted() -> None:
    assert parse_warnings(['299 - "unknown field \\"spec.x\\""', "junk"]) == [
        'unknown field "spec.x"'
    ]
