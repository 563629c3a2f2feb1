"""Certificates for the storage service's hop to etcd, wherever strata runs
etcd: in a deployment, on a network others share (compose, a cluster;
`strata pki --etcd-host`), and on `make run`'s loopback, which the machine's
other users reach too (strata.dev). etcd admits any client certificate its CA
signed, so the CA is one of its own, and its only client certificate is
storage's: no other service, whatever certificate it holds, reaches etcd."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path

from strata.tls._certificates import ensure_ca, ensure_leaf, issue
from strata.tls._hops import common_name

ETCD_CA_CERT = "etcd-ca.crt"
ETCD_CA_KEY = "etcd-ca.key"
ETCD_SERVER = "etcd-server"  # .crt and .key: etcd's --cert-file and --key-file
ETCD_CLIENT = "etcd-client"  # storage's --etcd-certfile and --etcd-keyfile
# etcd checks its own health on loopback.
_LOOPBACK = ("127.0.0.1", "localhost")


def ensure_etcd(directory: Path, hosts: Iterable[str]) -> list[Path]:
    """etcd's CA, a serving certificate for hosts (the names storage dials
    etcd at) and storage's client certificate in directory, made when missing
    (a new CA makes both again); the files made."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, fresh = ensure_ca(directory / ETCD_CA_CERT, directory / ETCD_CA_KEY, "strata-etcd-ca")
    made = [directory / ETCD_CA_CERT, directory / ETCD_CA_KEY] if fresh else []
    wanted = {
        ETCD_SERVER: ("etcd", sorted({*hosts, *_LOOPBACK}), True),
        ETCD_CLIENT: (common_name("storage"), [], False),
    }
    for stem, (name, names, server) in wanted.items():
        cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
        if fresh:
            cert.unlink(missing_ok=True)
        issued = functools.partial(issue, ca, name, hosts=names, server=server, client=True)
        if ensure_leaf(cert, key, issued):
            made += [cert, key]
    return made
