"""The gateway's authentication flags (kube-apiserver's) and what they build:
the token authenticators in kube's order (the admin token and
--token-auth-file, service-account tokens, the JWT issuers of
--authentication-config), anonymous requests, and the service-account
issuer's OIDC discovery; with what runs beside them (the informers service
accounts are checked against, the issuers' key fetches), started and stopped
with the app.

--anonymous-auth's default follows the authorization mode: kube takes requests
without credentials as system:anonymous and lets authorization decide, which
under AlwaysAllow would let anyone do anything; so with AlwaysAllow among the
modes anonymous requests stay refused (401, the health and version paths
apart) unless --anonymous-auth=true asks for them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from aiohttp import web

from services.gateway.authenticators import TokenAuthenticator, config
from services.gateway.authenticators.accounts import Accounts
from services.gateway.authenticators.jwt import JWTAuthenticator
from services.gateway.authenticators.keysets import KeySet
from services.gateway.authenticators.serviceaccounts import ServiceAccountTokens
from services.gateway.authenticators.static import StaticTokens
from services.gateway.authenticators.tokens import AudienceAgnostic, Tokens
from services.gateway.chain.authentication import RequestAuthenticator
from services.gateway.handlers.tokens import JWKS_PATH, IssuerDiscovery
from services.gateway.user import User
from strata import service, serviceaccounts

# Where `make run` keeps the service-account key pair (strata/dev).
KEY_PAIR = ("pki", "sa.pub")


class FlagError(ValueError):
    """A flag kube would refuse, in words that name it."""


def add_flags(parser: argparse.ArgumentParser) -> None:
    serviceaccounts.issuer_flags(parser)
    service.flag(
        parser,
        "service-account-key-file",
        "STRATA_SERVICE_ACCOUNT_KEY_FILE",
        "",
        "Comma-separated PEM files of the keys service-account tokens are verified with "
        "(public or private keys, or certificates; default: --home's pki/sa.pub, the public "
        "half of the key the registry signs with)",
    )
    service.flag(
        parser,
        "service-account-jwks-uri",
        "STRATA_SERVICE_ACCOUNT_JWKS_URI",
        "",
        "The jwks_uri of the issuer's discovery document (default: this gateway's "
        f"https://<advertise address>{JWKS_PATH})",
    )
    service.flag(
        parser,
        "authentication-config",
        "STRATA_AUTHENTICATION_CONFIG",
        "",
        "kube's AuthenticationConfiguration file: JWT issuers, and anonymous requests",
    )
    service.flag(
        parser,
        "anonymous-auth",
        "STRATA_ANONYMOUS_AUTH",
        "",
        "Take requests without credentials as system:anonymous, for authorization to decide: "
        "true or false (default: true unless the authorization mode includes AlwaysAllow)",
    )


def _keys(args: argparse.Namespace) -> list[serviceaccounts.PublicKey]:
    given = [Path(p.strip()) for p in args.service_account_key_file.split(",") if p.strip()]
    if not given:
        default = Path(args.home).joinpath(*KEY_PAIR)
        given = [default] if default.exists() else []
    keys: list[serviceaccounts.PublicKey] = []
    for path in given:
        try:
            keys += serviceaccounts.load_public_keys(path.read_bytes(), str(path))
        except OSError as e:
            raise FlagError(f"--service-account-key-file: {e}") from None
    return keys


def _anonymous(
    args: argparse.Namespace, configured: config.AuthenticationConfig
) -> config.Anonymous:
    flag = args.anonymous_auth.strip().lower()
    if flag not in ("", "true", "false"):
        raise FlagError(f"--anonymous-auth must be true or false, not {args.anonymous_auth!r}")
    if configured.anonymous is not None:
        if flag:
            raise FlagError(
                "anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field "
                "is configured in authentication configuration file"
            )
        return configured.anonymous
    if flag:
        return config.Anonymous(enabled=flag == "true")
    modes = getattr(args, "authorization_mode", "AlwaysAllow").split(",")
    return config.Anonymous(enabled="AlwaysAllow" not in (m.strip() for m in modes))


@dataclass
class Authentication:
    """What the flags built: the request authenticator, the token union (for
    TokenReview), the issuer's discovery (None without keys), and what runs."""

    request: RequestAuthenticator
    tokens: Tokens
    discovery: IssuerDiscovery | None
    accounts: Accounts | None = None
    keysets: list[KeySet] = field(default_factory=list)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self, _: web.Application) -> None:
        if self.accounts is not None:
            self.accounts.start()
        self._tasks = [asyncio.create_task(k.run(), name=f"keys {k.url}") for k in self.keysets]

    async def stop(self, _: web.Application) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.accounts is not None:
            await self.accounts.stop()


def build(
    args: argparse.Namespace,
    *,
    admin_token: str,
    token_file: dict[str, User],
    registry: grpc.aio.Channel,
    advertise: str,
) -> Authentication:
    """What the flags describe; FlagError (or config.ConfigError, a ValueError)
    for flags kube would refuse. advertise: host:port this gateway is reached at."""
    try:
        issuers, audiences = serviceaccounts.issuers_and_audiences(args)
    except ValueError as e:
        raise FlagError(str(e)) from None
    configured = config.AuthenticationConfig()
    if args.authentication_config:
        configured = config.load(Path(args.authentication_config), issuers)
    anonymous = _anonymous(args, configured)
    chain: list[TokenAuthenticator] = [
        AudienceAgnostic(StaticTokens(admin_token, token_file), audiences)
    ]
    keys = _keys(args)
    accounts = Accounts(registry) if keys else None
    if accounts is not None:
        chain.append(ServiceAccountTokens(keys, issuers, audiences, accounts))
    keysets = [KeySet(i.url, i.discovery_url, i.certificate_authority) for i in configured.issuers]
    chain += [
        AudienceAgnostic(JWTAuthenticator(i, k), audiences)
        for i, k in zip(configured.issuers, keysets, strict=True)
    ]
    tokens = Tokens(chain, audiences)
    discovery = None
    if keys:
        jwks_uri = args.service_account_jwks_uri or f"https://{advertise}{JWKS_PATH}"
        discovery = IssuerDiscovery(issuers[0], jwks_uri, keys)
    request = RequestAuthenticator(
        tokens, anonymous=anonymous.enabled, anonymous_paths=anonymous.paths
    )
    return Authentication(request, tokens, discovery, accounts, keysets)
