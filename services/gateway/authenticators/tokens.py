"""The bearer-token authenticators as one (kube's token union, the audience
wrapper of those that know nothing of audiences, and the group every
authenticated user is in), answering a request's token and a TokenReview's
alike.

kube asks its authenticators in order until one accepts the token; the
refusals of those that knew it are what a TokenReview's status.error says,
after kube's "invalid bearer token" ("invalid bearer token" alone when no
authenticator knew the token)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.gateway.authenticators import Authenticated, Rejected, TokenAuthenticator
from services.gateway.user import User, with_authenticated_group

INVALID_TOKEN = "invalid bearer token"


@dataclass(frozen=True)
class Review:
    """Who a token is (None: not authenticated, with kube's error), and the
    audiences it was accepted for."""

    user: User | None
    audiences: tuple[str, ...] = ()
    error: str = ""


class AudienceAgnostic:
    """kube's WrapAudienceAgnosticToken: a token of an authenticator that knows
    nothing of audiences is good for the API audiences only."""

    def __init__(self, delegate: TokenAuthenticator, api_audiences: tuple[str, ...]) -> None:
        self._delegate = delegate
        self._implicit = api_audiences

    async def authenticate_token(
        self, token: str, audiences: tuple[str, ...]
    ) -> Authenticated | None:
        good_for = tuple(a for a in self._implicit if a in audiences)
        if self._implicit and not good_for:
            return None
        found = await self._delegate.authenticate_token(token, audiences)
        return None if found is None else Authenticated(found.user, good_for)


class Tokens:
    def __init__(
        self, authenticators: Sequence[TokenAuthenticator], api_audiences: tuple[str, ...]
    ) -> None:
        self._authenticators = tuple(authenticators)
        self.api_audiences = api_audiences

    async def review(self, token: str, audiences: tuple[str, ...] = ()) -> Review:
        """Who token is, for audiences (the API audiences when none are named)."""
        wanted = audiences or self.api_audiences
        refusals: list[str] = []
        for authenticator in self._authenticators:
            try:
                found = await authenticator.authenticate_token(token, wanted)
            except Rejected as e:
                refusals.append(e.message)
                continue
            if found is not None:
                return Review(with_authenticated_group(found.user), found.audiences)
        if not refusals:
            return Review(None, error=INVALID_TOKEN)
        return Review(None, error="[" + ", ".join([INVALID_TOKEN, *refusals]) + "]")
