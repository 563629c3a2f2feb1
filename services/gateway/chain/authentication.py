"""Who a request comes from, as kube-apiserver's authenticators decide it: a
bearer token (the admin token strata makes, or one listed in a
--token-auth-file), else a client certificate the TLS handshake verified
against --client-ca-file (the user is its CommonName, the groups its
Organizations). A request with a token no one knows is 401 even with a good
certificate, as in kube; one with neither is 401 except on the public health
and version paths. What the user may do is the next steps' to decide
(services/gateway/chain/authorization.py).

The first step of the request chain after Status rendering: it keeps the user
on the request (services/gateway/user.py) for the steps and handlers after it."""

from __future__ import annotations

import csv
import hmac
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from services.gateway.user import USER, User
from strata.api import errors

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# Paths kube's system:public-info-viewer role opens to anyone.
PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
ADMIN = "strata-admin"


class TokenFileError(Exception):
    """A --token-auth-file line that cannot be read (its number says which)."""


def read_token_file(path: Path) -> dict[str, User]:
    """kube's static token file: token,user,uid[,"group1,group2"] per line."""
    users: dict[str, User] = {}
    with path.open(newline="") as f:
        for number, row in enumerate(csv.reader(f), start=1):
            if not row or row[0].startswith("#"):
                continue
            if len(row) < 3 or not row[0] or not row[1]:
                raise TokenFileError(
                    f"{path} line {number}: want token,user,uid[,groups], got {len(row)} fields"
                )
            groups = (
                tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
            )
            users[row[0]] = User(row[1], row[2], (*groups, "system:authenticated"))
    return users


def _certificate_user(peer: Any) -> User | None:
    """The user a verified client certificate names (ssl's getpeercert() form)."""
    if not peer:
        return None
    subject = [pair for rdn in peer.get("subject", ()) for pair in rdn]
    names = [value for key, value in subject if key == "commonName"]
    if not names:
        return None
    groups = tuple(value for key, value in subject if key == "organizationName")
    return User(names[0], "", (*groups, "system:authenticated"))


def authenticator(
    admin_token: str, tokens: Mapping[str, User]
) -> Callable[[web.Request], User | None]:
    admin = f"Bearer {admin_token}".encode()

    def authenticate(request: web.Request) -> User | None:
        given = request.headers.get("Authorization", "")
        if given:
            if hmac.compare_digest(given.encode(), admin):
                return User(ADMIN, "", ("system:masters", "system:authenticated"))
            scheme, _, token = given.partition(" ")
            if scheme.lower() == "bearer" and token:
                return tokens.get(token.strip())
            return None
        transport = request.transport
        peer = transport.get_extra_info("peercert") if transport is not None else None
        return _certificate_user(peer)

    return authenticate


def middleware(authenticate: Callable[[web.Request], User | None]) -> Middleware:
    @web.middleware
    async def authenticated(request: web.Request, handler: Handler) -> web.StreamResponse:
        user = authenticate(request)
        if user is None:
            if request.path in PUBLIC_PATHS:
                return await handler(request)
            raise errors.unauthorized()
        request[USER] = user
        return await handler(request)

    return authenticated
