"""What a token authenticator is (kube's authenticator.Token), and the ones
the gateway has, one module each: the static tokens (static.py: the admin
token and --token-auth-file), service-account tokens (serviceaccounts.py, over
the accounts and Secrets the gateway's informers keep, accounts.py), and the
JWT issuers of kube's structured authentication configuration (jwt.py, with
their keys fetched in keysets.py, configured by config.py). tokens.py puts
them together as kube's union does, for the chain's authentication step and
for TokenReview; certificates.py is the client-certificate user; flags.py
builds all of it from the gateway's flags.

An authenticator answers a token it does not know None (the next one is
asked), one it knows but refuses by raising Rejected with kube's words (what a
TokenReview's status.error says), and one it accepts with the user and the
audiences the token is good for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from services.gateway.user import User


@dataclass(frozen=True)
class Authenticated:
    user: User
    # The audiences the token was accepted for; () for an authenticator that
    # knows nothing of audiences (the API audiences stand for them).
    audiences: tuple[str, ...] = ()


class Rejected(Exception):
    """A token an authenticator knows and refuses, with kube's reason."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TokenAuthenticator(Protocol):
    async def authenticate_token(
        self, token: str, audiences: tuple[str, ...]
    ) -> Authenticated | None:
        """Who token is, for a request that wants audiences (the API audiences,
        or those a TokenReview names); None when the token is not of this kind."""
        ...


__all__ = ["Authenticated", "Rejected", "TokenAuthenticator"]
