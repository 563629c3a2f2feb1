"""Static bearer tokens: the admin token strata makes (user strata-admin in
system:masters) and kube's --token-auth-file (token,user,uid[,"groups"] per
line). The admin token is compared in constant time; the file's are looked up."""

from __future__ import annotations

import csv
import hmac
from collections.abc import Mapping
from pathlib import Path

from services.gateway.authenticators import Authenticated
from services.gateway.user import User

ADMIN = "strata-admin"
ADMIN_USER = User(ADMIN, "", ("system:masters",))


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
            users[row[0]] = User(row[1], row[2], groups)
    return users


class StaticTokens:
    """The admin token and a token file's (kube's tokenfile authenticator,
    which knows nothing of audiences)."""

    def __init__(self, admin_token: str, tokens: Mapping[str, User]) -> None:
        self._admin = admin_token.encode()
        self._tokens = dict(tokens)

    async def authenticate_token(
        self, token: str, audiences: tuple[str, ...]
    ) -> Authenticated | None:
        if self._admin and hmac.compare_digest(token.encode(), self._admin):
            return Authenticated(ADMIN_USER)
        user = self._tokens.get(token)
        return Authenticated(user) if user is not None else None
