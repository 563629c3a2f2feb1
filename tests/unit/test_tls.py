"""strata's internal PKI (strata.tls) and `strata pki`: the files made and
kept (the service-account key pair and the gateway's CA among them), what
each certificate names, and a service started without its
certificates stopping with a message that says how to make them."""

from __future__ import annotations

import argparse
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from services.cli import main as strata
from services.gateway import pki
from strata import service, tls


def _cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _names(cert: x509.Certificate) -> list[str]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    return [str(n.value) for n in san]


def _usages(cert: x509.Certificate) -> set[x509.ObjectIdentifier]:
    return set(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


def test_each_service_is_named_by_its_certificate_and_serves_its_contract(tmp_path: Path) -> None:
    made = tls.ensure(tmp_path)
    assert {p.name for p in made} == {"ca.crt", "ca.key"} | {
        f"{s}.{ext}" for s in tls.SERVICES for ext in ("crt", "key")
    }
    ca = _cert(tmp_path / "ca.crt")
    for name in tls.SERVICES:
        where = tls.files(tmp_path, name)
        cert = _cert(where.cert)
        cert.verify_directly_issued_by(ca)
        common = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        assert common == f"strata-{name}"
        assert _names(cert) == list(tls.SERVES[name])
        serving = {ExtendedKeyUsageOID.SERVER_AUTH} if tls.SERVES[name] else set()
        assert _usages(cert) == {ExtendedKeyUsageOID.CLIENT_AUTH} | serving
        assert stat.S_IMODE(where.key.stat().st_mode) == 0o600
    assert _names(_cert(tmp_path / "cacher.crt")) == [tls.STORAGE_CONTRACT]
    assert stat.S_IMODE((tmp_path / "ca.key").stat().st_mode) == 0o600


def test_files_are_kept_and_a_new_ca_certifies_everyone_again(tmp_path: Path) -> None:
    tls.ensure(tmp_path)
    before = (tmp_path / "storage.crt").read_bytes()
    assert tls.ensure(tmp_path) == []
    (tmp_path / "registry.key").unlink()
    assert [p.name for p in tls.ensure(tmp_path)] == ["registry.crt", "registry.key"]
    assert (tmp_path / "storage.crt").read_bytes() == before
    (tmp_path / "ca.key").unlink()
    assert len(tls.ensure(tmp_path, ("storage",))) == 4
    assert not (tmp_path / "cacher.crt").exists()  # signed by the CA that is gone
    _cert(tmp_path / "storage.crt").verify_directly_issued_by(_cert(tmp_path / "ca.crt"))


def test_etcd_has_a_ca_of_its_own_and_one_client(tmp_path: Path) -> None:
    tls.ensure_etcd(tmp_path, ["etcd", "etcd.strata.svc"])
    ca = _cert(tmp_path / "etcd-ca.crt")
    server, client = _cert(tmp_path / "etcd-server.crt"), _cert(tmp_path / "etcd-client.crt")
    for cert in (server, client):
        cert.verify_directly_issued_by(ca)
    assert _names(server) == ["127.0.0.1", "etcd", "etcd.strata.svc", "localhost"]
    assert client.subject.rfc4514_string() == "CN=strata-storage"
    assert not (tmp_path / "ca.crt").exists()


def test_strata_pki_makes_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    strata(["pki", "--dir", str(tmp_path), "storage", "cacher"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ca.crt", "ca.key", "cacher.crt", "cacher.key", "storage.crt", "storage.key",
    ]  # fmt: skip
    assert capsys.readouterr().out.splitlines()[0] == f"made {tmp_path / 'ca.crt'}"
    strata(["pki", "--dir", str(tmp_path), "--etcd-host", "etcd"])
    made = [line.removeprefix(f"made {tmp_path}/") for line in capsys.readouterr().out.split("\n")]
    assert made == [
        "registry.crt", "registry.key", "gateway.crt", "gateway.key",
        "etcd-ca.crt", "etcd-ca.key", "etcd-server.crt", "etcd-server.key",
        "etcd-client.crt", "etcd-client.key", "sa.key", "sa.pub", "",
    ]  # fmt: skip
    # The gateway's own CA, made before its first start, is kept by it.
    gateway = tmp_path / "home" / "pki"
    strata(["pki", "--dir", str(tmp_path), "--gateway-pki", str(gateway), "registry"])
    assert capsys.readouterr().out.split() == [
        "made",
        str(gateway / "ca.crt"),
        "made",
        str(gateway / "ca.key"),
    ]
    ca = gateway.joinpath("ca.crt").read_bytes()
    pki.ensure_pki(gateway, ["127.0.0.1"])
    assert gateway.joinpath("ca.crt").read_bytes() == ca
    with pytest.raises(SystemExit):
        strata(["pki", "--dir", str(tmp_path), "etcd"])
    assert "no service etcd: one of storage, cacher, registry, gateway" in capsys.readouterr().err


def test_a_service_without_its_certificates_says_how_to_make_them(tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    service.tls_flags(parser, "cacher")
    args = parser.parse_args(["--grpc-ca-file", str(tmp_path / "ca.crt")])
    with pytest.raises(SystemExit) as stopped:
        service.tls_identity(args, "strata-cacher")
    assert str(stopped.value) == (
        "strata-cacher: --grpc-cert-file, --grpc-key-file required: strata's gRPC hops are "
        "mutual TLS (`strata pki` makes the certificates)"
    )
    assert service.allowed_clients(args) == {"strata-registry"}
    tls.ensure(tmp_path)
    where = tls.files(tmp_path, "cacher")
    args = parser.parse_args(
        [
            f"--grpc-ca-file={where.ca}",
            f"--grpc-cert-file={where.cert}",
            f"--grpc-key-file={where.key}",
        ]
    )
    identity = service.tls_identity(args, "strata-cacher")
    assert identity.cert == where.cert.read_bytes()
    assert "PRIVATE KEY" not in repr(identity)


def test_strata_pki_is_installed(tmp_path: Path) -> None:
    """README: `strata pki --dir DIR` (`--etcd-host HOST`)."""
    installed = Path(sys.executable).parent / "strata"
    result = subprocess.run(
        [str(installed), "pki", "--dir", str(tmp_path), "--etcd-host", "etcd"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.startswith(f"made {tmp_path / 'ca.crt'}\n"), result.stdout
    assert (tmp_path / "etcd-server.crt").exists()
