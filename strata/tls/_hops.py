"""strata's internal PKI: one CA of its own, a certificate per service, and
who may call whom.

A service's certificate names it in its CommonName (`strata-storage`, ...):
that is the identity its calls carry, which the called service checks against
the callers it accepts. Its DNS names are the contracts it serves
(`storage.strata` for the storage contract, `registry.strata` for the
Registry), which is what a client checks of the server it reached: the
registry cannot tell the cacher from the storage service (both serve the
storage contract, and both certificates say so), but no service answers in
place of another contract. So certificates name no host: the same files work
on loopback, in compose and in a cluster.

This CA is not the gateway's: that one signs users' client certificates, and
a user called `strata-registry` must not reach storage with one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from strata.tls._certificates import (
    Authority,
    ensure_ca,
    ensure_leaf,
    issue,
)

CA_COMMON_NAME = "strata-internal-ca"
CA_CERT = "ca.crt"
CA_KEY = "ca.key"

STORAGE_CONTRACT = "storage.strata"
REGISTRY_CONTRACT = "registry.strata"

SERVICES = ("storage", "cacher", "registry", "gateway")
# The contracts each service's certificate lets it serve.
SERVES: dict[str, tuple[str, ...]] = {
    "storage": (STORAGE_CONTRACT,),
    "cacher": (STORAGE_CONTRACT,),
    "registry": (REGISTRY_CONTRACT,),
    "gateway": (),
}


def common_name(service: str) -> str:
    """The identity a service's certificate gives it: strata-<service>."""
    return f"strata-{service}"


# Who each service serves: storage the cacher and the registry (pointed at it
# to run without the watch cache), the cacher the registry, the registry the
# gateway and its own controllers (clients of its API like any other).
CALLERS: dict[str, tuple[str, ...]] = {
    "storage": (common_name("cacher"), common_name("registry")),
    "cacher": (common_name("registry"),),
    "registry": (common_name("gateway"), common_name("registry")),
}


@dataclass(frozen=True)
class Identity:
    """What one side of a hop shows and trusts, in PEM: strata's CA, and its
    own certificate and key."""

    ca: bytes
    cert: bytes
    key: bytes = field(repr=False)

    @classmethod
    def read(cls, ca_file: Path, cert_file: Path, key_file: Path) -> Identity:
        return cls(ca_file.read_bytes(), cert_file.read_bytes(), key_file.read_bytes())


@dataclass(frozen=True)
class Files:
    """Where one service's identity is kept."""

    ca: Path
    cert: Path
    key: Path

    def read(self) -> Identity:
        return Identity.read(self.ca, self.cert, self.key)


def files(directory: Path, service: str) -> Files:
    """The files of service's identity in a directory `ensure` filled."""
    return Files(directory / CA_CERT, directory / f"{service}.crt", directory / f"{service}.key")


def certify(ca: Authority, service: str) -> tuple[bytes, bytes]:
    """(certificate, key) in PEM of service's identity, signed by ca."""
    if service not in SERVES:
        raise ValueError(f"no strata service {service!r}: one of {', '.join(SERVICES)}")
    serves = SERVES[service]
    return issue(ca, common_name(service), hosts=serves, server=bool(serves), client=True)


def ensure(directory: Path, services: tuple[str, ...] = SERVICES) -> list[Path]:
    """strata's CA and each service's certificate and key in directory, made
    when missing (a new CA makes every certificate again); the files made."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, fresh = ensure_ca(directory / CA_CERT, directory / CA_KEY, CA_COMMON_NAME)
    made = [directory / CA_CERT, directory / CA_KEY] if fresh else []
    for service in SERVICES if fresh else ():
        files(directory, service).cert.unlink(missing_ok=True)
    for service in services:
        where = files(directory, service)
        if ensure_leaf(where.cert, where.key, functools.partial(certify, ca, service)):
            made += [where.cert, where.key]
    return made
