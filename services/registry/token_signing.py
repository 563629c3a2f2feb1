"""The registry's service-account signing flags (kube-apiserver's and
kube-controller-manager's): the key tokens are signed with, the issuer and
audiences they name, how long a TokenRequest's token may live, and the CA
bundle legacy token Secrets carry. Without a signing key the registry serves
no token subresource and runs no tokens controller, as kube installs neither
without one."""

from __future__ import annotations

import argparse
from pathlib import Path

from services.registry.builtin.serviceaccounts import Signer
from strata import service, serviceaccounts

# kube's floor for --service-account-max-token-expiration.
MIN_MAX_EXPIRATION_SECONDS = 3600


def add_flags(parser: argparse.ArgumentParser) -> None:
    service.flag(
        parser,
        "service-account-signing-key-file",
        "STRATA_SERVICE_ACCOUNT_SIGNING_KEY_FILE",
        "",
        "PEM private key (RSA, or EC P-256/384/521) service-account tokens are signed with",
    )
    serviceaccounts.issuer_flags(parser)
    service.flag(
        parser,
        "service-account-max-token-expiration",
        "STRATA_SERVICE_ACCOUNT_MAX_TOKEN_EXPIRATION",
        "",
        "The longest a TokenRequest's token may live (a duration, at least 1h; default: no bound)",
    )
    service.flag(
        parser,
        "root-ca-file",
        "STRATA_ROOT_CA_FILE",
        "",
        "The CA bundle legacy service-account token Secrets carry as ca.crt",
    )


def signer(args: argparse.Namespace) -> Signer | None:
    """The Signer the flags describe (None without a signing key); raises
    ValueError for flags kube would refuse."""
    if not args.service_account_signing_key_file:
        return None
    path = Path(args.service_account_signing_key_file)
    try:
        pem = path.read_bytes()
    except OSError as e:
        raise ValueError(f"--service-account-signing-key-file: {e}") from None
    key = serviceaccounts.load_signing_key(pem, str(path))
    issuers, audiences = serviceaccounts.issuers_and_audiences(args)
    longest = round(service.parse_duration(args.service_account_max_token_expiration))
    if longest and longest < MIN_MAX_EXPIRATION_SECONDS:
        raise ValueError(
            "--service-account-max-token-expiration must be at least 1h, not "
            f"{args.service_account_max_token_expiration}"
        )
    return Signer(key=key, issuer=issuers[0], audiences=audiences, max_expiration_seconds=longest)


def root_ca(args: argparse.Namespace) -> Path | None:
    return Path(args.root_ca_file) if args.root_ca_file else None
