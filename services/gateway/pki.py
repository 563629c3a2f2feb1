"""The gateway's serving identity, made on first start and kept in STRATA_HOME:
a self-signed CA, a serving certificate for 127.0.0.1/localhost signed by it,
and the admin bearer token. Later starts reuse them so kubeconfigs stay valid.
Users' client certificates come from this CA too; the internal gRPC hops have
a CA of their own (strata.tls)."""

from __future__ import annotations

import functools
import secrets
from pathlib import Path

from strata import tls

CA_CERT = "ca.crt"
CA_KEY = "ca.key"
SERVING_CERT = "apiserver.crt"
SERVING_KEY = "apiserver.key"
ADMIN_TOKEN = "admin-token"


def ensure_ca(directory: Path) -> tuple[tls.Authority, bool]:
    """The gateway's CA in directory, made when missing (`strata pki
    --gateway-pki` makes it before a deployment's first start, so that the
    registry can hand its ca.crt out); and whether it was made."""
    directory.mkdir(parents=True, exist_ok=True)
    return tls.ensure_ca(directory / CA_CERT, directory / CA_KEY, "strata-ca")


def ensure_pki(directory: Path, hosts: list[str]) -> tuple[Path, Path, Path]:
    """(ca cert, serving cert, serving key) in directory, created when missing."""
    ca_cert_path = directory / CA_CERT
    cert_path, key_path = directory / SERVING_CERT, directory / SERVING_KEY
    ca, fresh = ensure_ca(directory)
    if fresh:
        cert_path.unlink(missing_ok=True)
    serving = functools.partial(tls.issue, ca, "strata-apiserver", hosts=hosts, server=True)
    tls.ensure_leaf(cert_path, key_path, serving)
    return ca_cert_path, cert_path, key_path


def ensure_admin_token(directory: Path) -> str:
    path = directory / ADMIN_TOKEN
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        tls.write_private(path, secrets.token_urlsafe(32).encode())
    return path.read_text().strip()


def issue_client_certificate(
    directory: Path, user: str, groups: tuple[str, ...] = ()
) -> tuple[bytes, bytes]:
    """(certificate, key) in PEM for user (its CommonName) in groups (its
    Organizations), signed by the CA in directory: a client the gateway knows."""
    ca = tls.load_ca(directory / CA_CERT, directory / CA_KEY)
    return tls.issue(ca, user, organizations=groups, client=True)
