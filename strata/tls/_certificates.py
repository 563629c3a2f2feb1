"""Making X.509 certificates: a self-signed CA and the leaves it signs, with
EC P-256 keys. strata makes two CAs with these (the gateway's, which users'
client certificates come from, and the one of its internal gRPC hops), so the
making is here once."""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

Key = ec.EllipticCurvePrivateKey
# A CA: its certificate, and the key that signs with it.
Authority = tuple[x509.Certificate, Key]

CA_DAYS = 3650
LEAF_DAYS = 365
# Clocks of the machines a certificate travels to may be a little behind.
_BACKDATE = datetime.timedelta(minutes=5)


def key_pem(key: Key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def write_private(path: Path, data: bytes) -> None:
    """Write a private key readable by its owner only, from the first byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def load_ca(cert_path: Path, key_path: Path) -> Authority:
    key = serialization.load_pem_private_key(key_path.read_bytes(), None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{key_path}: not an EC private key")
    return x509.load_pem_x509_certificate(cert_path.read_bytes()), key


def new_ca(common_name: str) -> Authority:
    """A self-signed CA certificate and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
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
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def issue(
    ca: Authority,
    common_name: str,
    *,
    organizations: Iterable[str] = (),
    hosts: Iterable[str] = (),
    server: bool = False,
    client: bool = False,
) -> tuple[bytes, bytes]:
    """(certificate, key) in PEM, signed by ca: for common_name in
    organizations, valid for hosts (IPs or DNS names), and for serving, being a
    client, or both."""
    ca_cert, ca_key = ca
    key = ec.generate_private_key(ec.SECP256R1())
    subject = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    subject.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    usages = [ExtendedKeyUsageOID.SERVER_AUTH] * server + [ExtendedKeyUsageOID.CLIENT_AUTH] * client
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + datetime.timedelta(days=LEAF_DAYS))
    )
    names = [_general_name(host) for host in hosts]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False).sign(
        ca_key, hashes.SHA256()
    )
    return cert_pem(cert), key_pem(key)


def ensure_ca(cert_path: Path, key_path: Path, common_name: str) -> tuple[Authority, bool]:
    """The CA kept in cert_path and key_path, made first if either is
    missing; and whether it was made (what it signed before is then void)."""
    if cert_path.exists() and key_path.exists():
        return load_ca(cert_path, key_path), False
    cert, key = new_ca(common_name)
    write_private(key_path, key_pem(key))
    cert_path.write_bytes(cert_pem(cert))
    return (cert, key), True


def ensure_leaf(cert_path: Path, key_path: Path, make: Callable[[], tuple[bytes, bytes]]) -> bool:
    """Keep the (certificate, key) make gives in cert_path and key_path unless
    both are there; whether it was made."""
    if cert_path.exists() and key_path.exists():
        return False
    cert, key = make()
    write_private(key_path, key)
    cert_path.write_bytes(cert)
    return True
