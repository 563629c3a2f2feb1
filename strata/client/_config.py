"""Where a client connects and who it is: kubeconfig files (contexts, clusters,
users) and in-cluster service-account configuration, with kubectl's rules for
which one applies.

Precedence, as kubectl and client-go's default loading rules have it: an
explicit kubeconfig path; else the files in $KUBECONFIG (merged, the first file
to set a value wins); else ~/.kube/config; and when none of those exists, the
in-cluster configuration (KUBERNETES_SERVICE_HOST/_PORT and the service
account's token and CA). A context, cluster or user named but not defined is an
error that says which.
"""

from __future__ import annotations

import base64
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class ConfigError(Exception):
    """A kubeconfig or in-cluster configuration that cannot be used."""


@dataclass(frozen=True, kw_only=True)
class ExecConfig:
    """A client-go credential plugin (users[].user.exec)."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = "client.authentication.k8s.io/v1"
    # Where relative commands are found: the kubeconfig's directory.
    base_dir: Path = Path(".")
    provide_cluster_info: bool = False


@dataclass(frozen=True, kw_only=True)
class Config:
    """Everything a REST client needs to reach one API server as one user."""

    server: str
    ca_data: bytes | None = None
    insecure_skip_tls_verify: bool = False
    tls_server_name: str = ""
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = None
    token: str = ""
    token_file: Path | None = None
    username: str = ""
    password: str = ""
    exec: ExecConfig | None = None
    proxy_url: str = ""
    namespace: str = "default"
    user_agent: str = "strata-client"
    extra_headers: tuple[tuple[str, str], ...] = field(default=())

    def bearer_token(self) -> str:
        """The static or file token, read fresh (projected tokens rotate)."""
        if self.token_file is not None:
            return self.token_file.read_text().strip()
        return self.token


def _data(entry: dict[str, Any], data_key: str, file_key: str, base: Path) -> bytes | None:
    """Inline base64 data, or the file it names (relative to the kubeconfig)."""
    if entry.get(data_key):
        try:
            return base64.b64decode(entry[data_key], validate=True)
        except ValueError as e:
            raise ConfigError(f"{data_key} is not valid base64: {e}") from None
    if entry.get(file_key):
        path = Path(os.path.expanduser(str(entry[file_key])))
        path = path if path.is_absolute() else base / path
        try:
            return path.read_bytes()
        except OSError as e:
            raise ConfigError(f"cannot read {file_key} {path}: {e.strerror}") from None
    return None


def _named(items: Any, kind: str, name: str, source: str) -> dict[str, Any]:
    for item in items or ():
        if isinstance(item, dict) and item.get("name") == name:
            return dict(item.get(kind) or {})
    raise ConfigError(f"{kind} {name!r} is not defined in {source}")


def _merged(paths: list[Path]) -> tuple[dict[str, Any], dict[str, Path]]:
    """The kubeconfig files merged as client-go merges them (the first file to
    define a named entry or current-context wins), and each entry's file."""
    merged: dict[str, Any] = {"clusters": [], "contexts": [], "users": []}
    origin: dict[str, Path] = {}
    for path in paths:
        try:
            loaded = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"{path} is not a kubeconfig: {e}") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path} is not a kubeconfig")
        if "current-context" not in merged and loaded.get("current-context"):
            merged["current-context"] = loaded["current-context"]
        for section in ("clusters", "contexts", "users"):
            known = {item.get("name") for item in merged[section]}
            for item in loaded.get(section) or ():
                if isinstance(item, dict) and item.get("name") not in known:
                    merged[section].append(item)
                    origin[f"{section}/{item.get('name')}"] = path.parent
    return merged, origin


def load_kubeconfig(
    paths: list[Path], *, context: str = "", cluster: str = "", user: str = ""
) -> Config:
    """The configuration a context in the merged kubeconfig files gives
    (the current context when none is named)."""
    source = ", ".join(str(p) for p in paths)
    merged, origin = _merged(paths)
    context_name = context or merged.get("current-context", "")
    if not context_name:
        raise ConfigError(f"no context is set in {source}: name one or set current-context")
    ctx = _named(merged["contexts"], "context", context_name, source)
    cluster_name = cluster or str(ctx.get("cluster", ""))
    user_name = user or str(ctx.get("user", ""))
    cl = _named(merged["clusters"], "cluster", cluster_name, source)
    us = _named(merged["users"], "user", user_name, source) if user_name else {}
    if not cl.get("server"):
        raise ConfigError(f"cluster {cluster_name!r} has no server")
    cluster_dir = origin.get(f"clusters/{cluster_name}", Path("."))
    user_dir = origin.get(f"users/{user_name}", Path("."))
    exec_config = None
    if isinstance(us.get("exec"), dict):
        spec = us["exec"]
        if not spec.get("command"):
            raise ConfigError(f"user {user_name!r}: exec has no command")
        exec_config = ExecConfig(
            command=str(spec["command"]),
            args=tuple(str(a) for a in spec.get("args") or ()),
            env=tuple((str(e["name"]), str(e.get("value", ""))) for e in spec.get("env") or ()),
            api_version=str(spec.get("apiVersion") or "client.authentication.k8s.io/v1"),
            base_dir=user_dir,
            provide_cluster_info=bool(spec.get("provideClusterInfo")),
        )
    token_file = us.get("tokenFile")
    return Config(
        server=str(cl["server"]).rstrip("/"),
        ca_data=_data(cl, "certificate-authority-data", "certificate-authority", cluster_dir),
        insecure_skip_tls_verify=bool(cl.get("insecure-skip-tls-verify")),
        tls_server_name=str(cl.get("tls-server-name", "")),
        client_cert_data=_data(us, "client-certificate-data", "client-certificate", user_dir),
        client_key_data=_data(us, "client-key-data", "client-key", user_dir),
        token=str(us.get("token", "")),
        token_file=(user_dir / os.path.expanduser(str(token_file))) if token_file else None,
        username=str(us.get("username", "")),
        password=str(us.get("password", "")),
        exec=exec_config,
        proxy_url=str(cl.get("proxy-url", "")),
        namespace=str(ctx.get("namespace") or "default"),
    )


def in_cluster(directory: Path = SERVICE_ACCOUNT_DIR) -> Config:
    """The configuration of a pod: the API server from KUBERNETES_SERVICE_HOST
    and _PORT, the service account's token (re-read as it rotates) and CA."""
    host, port = (
        os.environ.get("KUBERNETES_SERVICE_HOST"),
        os.environ.get("KUBERNETES_SERVICE_PORT"),
    )
    if not host or not port:
        raise ConfigError(
            "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set"
        )
    token = directory / "token"
    if not token.is_file():
        raise ConfigError(f"not in a cluster: no service account token at {token}")
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    namespace_file = directory / "namespace"
    ca = directory / "ca.crt"
    return Config(
        server=f"https://{host}:{port}",
        ca_data=ca.read_bytes() if ca.is_file() else None,
        token_file=token,
        namespace=namespace_file.read_text().strip() if namespace_file.is_file() else "default",
    )


def default_kubeconfig_paths() -> list[Path]:
    """$KUBECONFIG's files (those that exist), else ~/.kube/config if it exists."""
    listed = os.environ.get("KUBECONFIG", "")
    if listed:
        return [Path(p) for p in listed.split(os.pathsep) if p and Path(p).is_file()]
    home = Path(os.path.expanduser("~/.kube/config"))
    return [home] if home.is_file() else []


def load_config(
    kubeconfig: str | Path | None = None, *, context: str = "", directory: Path | None = None
) -> Config:
    """The configuration kubectl would use: an explicit kubeconfig, else
    $KUBECONFIG or ~/.kube/config, else in-cluster."""
    if kubeconfig is not None:
        path = Path(kubeconfig)
        if not path.is_file():
            raise ConfigError(f"kubeconfig {path} does not exist")
        return load_kubeconfig([path], context=context)
    paths = default_kubeconfig_paths()
    if paths:
        return load_kubeconfig(paths, context=context)
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster(directory or SERVICE_ACCOUNT_DIR)
    raise ConfigError(
        "no configuration: set KUBECONFIG, create ~/.kube/config, or run in a cluster"
    )


def write_temp(data: bytes) -> str:
    """data in a private temporary file (ssl wants certificate chains as files)."""
    fd, name = tempfile.mkstemp(prefix="strata-client-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return name
