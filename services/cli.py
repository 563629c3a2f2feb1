"""The `strata` command: operator tasks of the services (`strata storage
reencrypt`) and the certificates and keys a deployment's services need
(`strata pki`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from services.gateway import pki
from services.storage.__main__ import main as storage_main
from strata import serviceaccounts, tls

USAGE = (
    "usage: strata storage reencrypt [--etcd ADDR] [--etcd-prefix PREFIX] "
    "--encryption-provider-config FILE\n"
    "       strata pki [--dir DIR] [--etcd-host HOST] [--gateway-pki DIR] [SERVICE ...]"
)


def pki_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="strata pki",
        description=(
            "Make strata's internal CA and, for each service, the certificate and key of its "
            "mutual-TLS gRPC hops (a service's --grpc-ca-file, --grpc-cert-file and "
            "--grpc-key-file: DIR/ca.crt, DIR/<service>.crt, DIR/<service>.key), and with the "
            "registry or the gateway the service-account key pair (DIR/sa.key for the "
            "registry's --service-account-signing-key-file, DIR/sa.pub for the gateway's "
            "--service-account-key-file). Files already in DIR are kept; a new CA makes every "
            "certificate again. The certificates name no host, so they serve any deployment. "
            "Keep ca.key out of the services' reach, and sa.key out of all but the registry's."
        ),
    )
    parser.add_argument("--dir", default="strata-pki", help="where the files go (strata-pki)")
    parser.add_argument(
        "--etcd-host",
        action="append",
        default=[],
        metavar="HOST",
        help=(
            "also etcd's own CA, a serving certificate for HOST (repeat for more names; "
            f"{tls.ETCD_SERVER}.crt/.key) and storage's client certificate for etcd "
            f"({tls.ETCD_CLIENT}.crt/.key, for --etcd-certfile and --etcd-keyfile)"
        ),
    )
    parser.add_argument(
        "--gateway-pki",
        metavar="DIR",
        help=(
            "also the gateway's own CA (of its serving certificate and users' client "
            "certificates), in DIR/ca.crt and DIR/ca.key: the gateway's --home/pki, where it "
            "would make it on first start; made first, its ca.crt can be the registry's "
            "--root-ca-file (legacy token Secrets' ca.crt)"
        ),
    )
    parser.add_argument(
        "services",
        nargs="*",
        metavar="SERVICE",
        help=f"the services to certify: {', '.join(tls.SERVICES)} (default: all)",
    )
    args = parser.parse_args(argv)
    if unknown := [s for s in args.services if s not in tls.SERVICES]:
        parser.error(f"no service {', '.join(unknown)}: one of {', '.join(tls.SERVICES)}")
    directory = Path(args.dir)
    services = tuple(args.services) or tls.SERVICES
    made = tls.ensure(directory, services)
    if args.etcd_host:
        made += tls.ensure_etcd(directory, args.etcd_host)
    if {"registry", "gateway"} & set(services):
        made += _key_pair(directory)
    if args.gateway_pki and pki.ensure_ca(Path(args.gateway_pki))[1]:
        made += [Path(args.gateway_pki) / pki.CA_CERT, Path(args.gateway_pki) / pki.CA_KEY]
    for path in made:
        print(f"made {path}")
    if not made:
        print(f"{directory}: every certificate asked for is there")


def _key_pair(directory: Path) -> list[Path]:
    """The service-account key pair the registry signs tokens with and the
    gateway verifies them with, in directory; the files made."""
    had_key, had_public = (directory / "sa.key").exists(), (directory / "sa.pub").exists()
    private, public = serviceaccounts.ensure_key_pair(directory)
    # A new key makes its public half again.
    if not had_key:
        return [private, public]
    return [] if had_public else [public]


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["storage", "reencrypt"]:
        storage_main(["reencrypt", *argv[2:]])
        return
    if argv[:1] == ["pki"]:
        pki_main(argv[1:])
        return
    raise SystemExit(USAGE)


if __name__ == "__main__":
    main()
