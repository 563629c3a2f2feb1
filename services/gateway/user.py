"""Who a request acts as (kube's user.Info), kept on the request by the
authentication step (and replaced by the impersonation step) and read by the
steps and handlers after it: here, apart from the chain, so that a handler can
know the user without importing a step of the chain in front of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

AUTHENTICATED = "system:authenticated"
# kube's user.SystemPrivilegedGroup: allowed everything, throttled by nothing.
SUPERUSER_GROUP = "system:masters"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS_NAME = "system:anonymous"
# Extra: (key, values) pairs in key order, so that a User stays hashable and
# compares equal however its extra was given.
Extra = tuple[tuple[str, tuple[str, ...]], ...]


def extra_of(given: Mapping[str, list[str] | tuple[str, ...]]) -> Extra:
    return tuple((key, tuple(values)) for key, values in sorted(given.items()))


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Extra = ()

    def info(self) -> dict[str, Any]:
        """As authentication.k8s.io's UserInfo (kube leaves out an empty uid and extra)."""
        info: dict[str, Any] = {"username": self.name}
        if self.uid:
            info["uid"] = self.uid
        info["groups"] = list(self.groups)
        if self.extra:
            info["extra"] = {key: list(values) for key, values in self.extra}
        return info

    def extra_values(self, key: str) -> tuple[str, ...]:
        return next((values for k, values in self.extra if k == key), ())


def with_authenticated_group(user: User) -> User:
    """kube's AuthenticatedGroupAdder: every authenticated user is in
    system:authenticated, unless its groups already say whether it is."""
    if AUTHENTICATED in user.groups or UNAUTHENTICATED in user.groups:
        return user
    return User(user.name, user.uid, (*user.groups, AUTHENTICATED), user.extra)


USER = web.RequestKey("user", User)
# Who made a request that impersonates another (USER is then the one impersonated).
REQUESTOR = web.RequestKey("requestor", User)
# Whom kube takes a request with no credentials for.
ANONYMOUS = User(ANONYMOUS_NAME, "", (UNAUTHENTICATED,))


def of(request: web.Request) -> User:
    """The user request acts as: the authenticated one, else anonymous."""
    found: User = request.get(USER, ANONYMOUS)
    return found
