"""The gateway's serving identity, made on first start and kept in STRATA_HOME:
a self-signed CA, a serving certificate for 127.0.0.1/localhost signed by it,
and the admin bearer token. Later starts reuse them so kubeconfigs stay valid."""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CA_CERT = "ca.crt"
CA_KEY = "ca.key"
SERVING_CERT = "apiserver.crt"
SERVING_KEY = "apiserver.key"
ADMIN_TOKEN = "admin-token"


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def ensure_pki(directory: Path, hosts: list[str]) -> tuple[Path, Path, Path]:
    """(ca cert, serving cert, serving key) in directory, created when missing."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert_path, ca_key_path = directory / CA_CERT, directory / CA_KEY
    cert_path, key_path = directory / SERVING_CERT, directory / SERVING_KEY
    now = datetime.datetime.now(datetime.UTC)
    if not ca_cert_path.exists() or not ca_key_path.exists():
        ca_key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "strata-ca")])
        ca_cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(ca_key, hashes.SHA256())
        )
        _write_private(ca_key_path, _key_pem(ca_key))
        ca_cert_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
        cert_path.unlink(missing_ok=True)
    if not cert_path.exists() or not key_path.exists():
        ca_key_loaded = serialization.load_pem_private_key(ca_key_path.read_bytes(), None)
        assert isinstance(ca_key_loaded, ec.EllipticCurvePrivateKey)
        ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "strata-apiserver")]))
            .issuer_name(ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
            )
            .sign(ca_key_loaded, hashes.SHA256())
        )
        _write_private(key_path, _key_pem(key))
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return ca_cert_path, cert_path, key_path


def ensure_admin_token(directory: Path) -> str:
    path = directory / ADMIN_TOKEN
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        _write_private(path, secrets.token_urlsafe(32).encode())
    return path.read_text().strip()


def issue_client_certificate(
    directory: Path, user: str, groups: tuple[str, ...] = ()
) -> tuple[bytes, bytes]:
    """(certificate, key) in PEM for user (its CommonName) in groups (its
    Organizations), signed by the CA in directory: a client the gateway knows."""
    ca_key = serialization.load_pem_private_key((directory / CA_KEY).read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    ca_cert = x509.load_pem_x509_certificate((directory / CA_CERT).read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, group) for group in groups]
    subject.append(x509.NameAttribute(NameOID.COMMON_NAME, user))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)
