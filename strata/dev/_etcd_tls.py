"""etcd's TLS under `make run`: https with client certificates on its client
and peer URLs, as in the compose deployment, so that another user of the
machine, who can reach a loopback port but not $STRATA_HOME, cannot read or
write what strata stores. The certificates are strata.tls.ensure_etcd's (the
same code `strata pki --etcd-host` runs), kept in $STRATA_HOME/pki/etcd, made
on the first start and reused after: etcd's own CA, its serving certificate
(for 127.0.0.1 and localhost, also its peer certificate) and storage's client
certificate, the only one etcd admits."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from strata import tls
from strata.etcd import EtcdTLS


@dataclass(frozen=True)
class EtcdCertificates:
    """The files of etcd's certificates in directory."""

    directory: Path

    def ensure(self) -> None:
        """Make what is missing (a new CA makes every certificate again)."""
        tls.ensure_etcd(self.directory, ())

    @property
    def ca(self) -> Path:
        return self.directory / tls.ETCD_CA_CERT

    def _pair(self, stem: str) -> tuple[Path, Path]:
        return self.directory / f"{stem}.crt", self.directory / f"{stem}.key"

    def server_flags(self) -> tuple[str, ...]:
        """etcd's flags: certificates demanded on its client and peer URLs."""
        cert, key = self._pair(tls.ETCD_SERVER)
        return (
            "--client-cert-auth",
            f"--trusted-ca-file={self.ca}",
            f"--cert-file={cert}",
            f"--key-file={key}",
            "--peer-client-cert-auth",
            f"--peer-trusted-ca-file={self.ca}",
            f"--peer-cert-file={cert}",
            f"--peer-key-file={key}",
        )

    def client_flags(self) -> tuple[str, ...]:
        """The storage service's flags (and `strata storage reencrypt`'s)."""
        cert, key = self._pair(tls.ETCD_CLIENT)
        return (f"--etcd-cafile={self.ca}", f"--etcd-certfile={cert}", f"--etcd-keyfile={key}")

    def client_tls(self) -> EtcdTLS:
        """What strata.etcd.Etcd presents: storage's client certificate."""
        cert, key = self._pair(tls.ETCD_CLIENT)
        return EtcdTLS(ca_file=self.ca, cert_file=cert, key_file=key)
