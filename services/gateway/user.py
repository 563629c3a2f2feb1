"""Who a request acts as (kube's user.Info), kept on the request by the
authentication step and read by the steps and handlers after it: here, apart
from the chain, so that a handler can know the user without importing a step
of the chain in front of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()

    def info(self) -> dict[str, Any]:
        """As authentication.k8s.io's UserInfo."""
        info: dict[str, Any] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            info["uid"] = self.uid
        return info


USER = web.RequestKey("user", User)
# Whom kube takes a request with no credentials for, on the paths open to anyone.
ANONYMOUS = User("system:anonymous", "", ("system:unauthenticated",))


def of(request: web.Request) -> User:
    """The user request acts as: the authenticated one, else anonymous."""
    found: User = request.get(USER, ANONYMOUS)
    return found
