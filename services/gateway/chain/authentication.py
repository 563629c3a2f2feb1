"""Who a request comes from, as kube-apiserver's authentication filter decides
it: a client certificate the TLS handshake verified against --client-ca-file
first, else a bearer token, which the token authenticators
(services/gateway/authenticators/) must know: the admin token, a
--token-auth-file's, a service account's, or a JWT issuer's. A token no one
accepts is 401, on every path. A request with neither is anonymous
(system:anonymous in system:unauthenticated) when anonymous authentication is
on, on the paths it is limited to, and the next steps decide what it may do;
with it off it is 401, except on the public health and version paths, which
it reaches as anonymous.

The first step of the request chain after Status rendering: it keeps the user
on the request (services/gateway/user.py) for the steps and handlers after it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from aiohttp.typedefs import Middleware

from services.gateway.authenticators.certificates import certificate_user
from services.gateway.authenticators.static import StaticTokens
from services.gateway.authenticators.tokens import Tokens
from services.gateway.user import ANONYMOUS, USER, User, with_authenticated_group
from strata.api import errors

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# Paths kube's system:public-info-viewer role opens to anyone: with anonymous
# authentication off, strata lets them through without credentials.
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})


def bearer_token(request: web.Request) -> str:
    """The request's bearer token as kube's bearertoken authenticator reads it
    ("" for none, an empty one, or another scheme)."""
    parts = request.headers.get("Authorization", "").strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return ""
    return parts[1]


class RequestAuthenticator:
    """A request's user; anonymous: whether anonymous authentication is on, and
    the paths it is limited to (None: every path)."""

    def __init__(
        self, tokens: Tokens, *, anonymous: bool, anonymous_paths: frozenset[str] | None = None
    ) -> None:
        self.tokens = tokens
        self.anonymous = anonymous
        self._anonymous_paths = anonymous_paths

    async def authenticate(self, request: web.Request) -> User | None:
        """The user, None to go on without one (a public path), or 401."""
        user = certificate_user(request)
        if user is not None:
            return with_authenticated_group(user)
        token = bearer_token(request)
        if token:
            review = await self.tokens.review(token)
            if review.user is None:
                raise errors.unauthorized()
            return review.user
        if self.anonymous:
            if self._anonymous_paths is None or request.path in self._anonymous_paths:
                return ANONYMOUS
            raise errors.unauthorized()
        if request.path in PUBLIC_PATHS:
            return None
        raise errors.unauthorized()


def authenticator(admin_token: str, tokens: Mapping[str, User]) -> RequestAuthenticator:
    """Static tokens only (the admin token and a token file's), no anonymous
    requests: a gateway with nothing else configured."""
    return RequestAuthenticator(Tokens([StaticTokens(admin_token, tokens)], ()), anonymous=False)


def middleware(authenticate: RequestAuthenticator) -> Middleware:
    @web.middleware
    async def authenticated(request: web.Request, handler: Handler) -> web.StreamResponse:
        user = await authenticate.authenticate(request)
        if user is not None:
            request[USER] = user
        return await handler(request)

    return authenticated
