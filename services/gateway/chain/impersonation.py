"""kube's impersonation filter, between authentication and authorization: a
request with Impersonate-User (and Impersonate-Uid, Impersonate-Group,
Impersonate-Extra-<key>) acts as that user, if the authorizer lets the
requestor impersonate each thing asked for (`kubectl --as`, `--as-group`).

As kube v1.36 does it (constrained impersonation, KEP 5284, with the legacy
checks kept): the modes are tried in order, the one that last worked for the
requestor first, until one allows the request:
- serviceaccount (a service account's username alone), arbitrary-node
  (system:node:<name> alone) and user-info (any other user, with uid, groups
  and extra): the requestor may do this request's verb while impersonating in
  that mode (the verb impersonate-on:<mode>:<verb> on the request's own
  resource or path), and impersonate:<mode> on the user (users, nodes or
  serviceaccounts), uid, each group and each extra value, in
  authentication.k8s.io;
- legacy: the impersonate verb on users or serviceaccounts, uids, groups and
  userextras/<key>, as kube has always checked it.
A refusal is the 403 of the first mode that refused (kube's mode associated
with a node's service account does not apply: strata has no nodes).

The user impersonated is in system:authenticated (system:unauthenticated for
system:anonymous); a service account's groups are its own unless groups are
given. The requestor stays on the request (user.REQUESTOR) and in the audit.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import unquote

from aiohttp import web
from aiohttp.typedefs import Middleware

from services.gateway import audit
from services.gateway.authorizers import Attributes, Authorizer, Decision, decided
from services.gateway.chain.authorization import attributes_of, forbidden
from services.gateway.user import (
    ANONYMOUS_NAME,
    AUTHENTICATED,
    REQUESTOR,
    SUPERUSER_GROUP,
    UNAUTHENTICATED,
    USER,
    User,
    extra_of,
)
from services.gateway.user import of as user_of
from strata import serviceaccounts
from strata.api import errors, names
from strata.api.errors import StatusError
from strata.api.goquote import quote

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
USER_HEADER, UID_HEADER, GROUP_HEADER = "Impersonate-User", "Impersonate-Uid", "Impersonate-Group"
EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATION = "authentication.k8s.io"
NODE_PREFIX = "system:node:"
# kube's threshold past which one wildcard check is tried before many.
MANY_CHECKS = 4
# kube's count of requestors whose last successful mode is remembered.
REMEMBERED = 10_000


@dataclass(frozen=True)
class Wanted:
    """The user the headers ask for, as they give it (kube's user.DefaultInfo)."""

    name: str
    uid: str
    groups: tuple[str, ...] | None
    extra: dict[str, list[str]] | None

    def only_name(self) -> bool:
        return not self.uid and not self.groups and not self.extra

    def go(self) -> str:
        """As Go's %#v writes a *user.DefaultInfo."""
        groups = (
            "[]string(nil)"
            if self.groups is None
            else "[]string{" + ", ".join(quote(g) for g in self.groups) + "}"
        )
        if self.extra is None:
            extra = "map[string][]string(nil)"
        else:
            pairs = (
                f"{quote(k)}:[]string{{{', '.join(quote(v) for v in vs)}}}"
                for k, vs in sorted(self.extra.items())
            )
            extra = "map[string][]string{" + ", ".join(pairs) + "}"
        return (
            f"&user.DefaultInfo{{Name:{quote(self.name)}, UID:{quote(self.uid)}, "
            f"Groups:{groups}, Extra:{extra}}}"
        )


def wanted_user(request: web.Request) -> Wanted | None:
    """What the request asks to impersonate (None: nothing), or kube's 400."""
    headers = request.headers
    groups = tuple(headers.getall(GROUP_HEADER, ())) or None
    extra: dict[str, list[str]] | None = None
    for header, value in headers.items():
        if header.lower().startswith(EXTRA_PREFIX):
            key = unquote(header[len(EXTRA_PREFIX) :].lower())
            extra = extra if extra is not None else {}
            extra.setdefault(key, []).append(value)
    wanted = Wanted(headers.get(USER_HEADER, ""), headers.get(UID_HEADER, ""), groups, extra)
    if not wanted.name:
        if wanted.uid or groups is not None or extra is not None:
            raise errors.bad_request(f"requested {wanted.go()} without impersonating a user name")
        return None
    return wanted


def _node_name(username: str) -> str | None:
    if not username.startswith(NODE_PREFIX):
        return None
    name = username[len(NODE_PREFIX) :]
    return None if names.dns1123_subdomain_errors(name) else name


class _Checks:
    """The authorization checks of one impersonation, each refused as kube's 403."""

    def __init__(self, authorizer: Authorizer, requestor: User) -> None:
        self._authorizer = authorizer
        self._requestor = requestor

    async def check(self, attributes: Attributes) -> None:
        # kube refuses an impersonation 403 whatever kept it from being allowed.
        decision, reason = await decided(self._authorizer, attributes)
        if decision is not Decision.ALLOW:
            raise forbidden(attributes, reason)

    async def allowed(self, attributes: Attributes) -> bool:
        decision, _ = await decided(self._authorizer, attributes)
        return decision is Decision.ALLOW

    def on(self, verb: str, group: str, resource: str, name: str = "", **more: str) -> Attributes:
        return Attributes(self._requestor, verb, "", True, group, "v1", resource, name=name, **more)


class Mode:
    """One way of impersonating: constrained (verb impersonate:<mode>, with its
    impersonate-on check) or legacy (verb impersonate)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.constrained = name != "legacy"
        self.verb = f"impersonate:{name}" if self.constrained else "impersonate"
        # Users and groups are authentication.k8s.io's in constrained modes, core's in legacy.
        self.group = AUTHENTICATION if self.constrained else ""

    def applies(self, wanted: Wanted) -> bool:
        account = serviceaccounts.split_username(wanted.name) is not None
        node = _node_name(wanted.name) is not None
        if self.name == "serviceaccount":
            return account and wanted.only_name()
        if self.name == "arbitrary-node":
            return node and wanted.only_name()
        if self.name == "user-info":
            return not account and not node
        return True

    async def impersonate(self, checks: _Checks, wanted: Wanted, request: Attributes) -> User:
        if self.constrained:
            verb = f"impersonate-on:{self.name}:{request.verb}"
            await checks.check(request._replace(verb=verb))
        groups = list(wanted.groups or ())
        user_check = checks.on(self.verb, self.group, "users", wanted.name)
        if self.constrained and (node := _node_name(wanted.name)) is not None:
            user_check, groups = user_check._replace(resource="nodes", name=node), ["system:nodes"]
        if (account := serviceaccounts.split_username(wanted.name)) is not None:
            namespace, name = account
            user_check = user_check._replace(
                resource="serviceaccounts", namespace=namespace, name=name
            )
            if not wanted.groups:
                groups = list(serviceaccounts.groups(namespace))
        await checks.check(user_check)
        if wanted.uid:
            await checks.check(checks.on(self.verb, AUTHENTICATION, "uids", wanted.uid))
        await self._groups(checks, list(wanted.groups or ()))
        await self._extra(checks, wanted.extra or {})
        if wanted.name == ANONYMOUS_NAME:
            groups += [] if UNAUTHENTICATED in groups else [UNAUTHENTICATED]
        elif UNAUTHENTICATED not in groups and AUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
        return User(wanted.name, wanted.uid, tuple(groups), extra_of(wanted.extra or {}))

    async def _groups(self, checks: _Checks, groups: list[str]) -> None:
        if not groups:
            return
        check = checks.on(self.verb, self.group, "groups")
        if self.constrained:
            if "" in groups:
                raise forbidden(check, "impersonating the empty string group is not allowed")
            if SUPERUSER_GROUP in groups:
                raise forbidden(
                    check._replace(name=SUPERUSER_GROUP),
                    "impersonating the system:masters group is not allowed",
                )
            if len(groups) >= MANY_CHECKS and await checks.allowed(check._replace(name="*")):
                return
        for group in groups:
            await checks.check(check._replace(name=group))

    async def _extra(self, checks: _Checks, extra: dict[str, list[str]]) -> None:
        if not extra:
            return
        check = checks.on(self.verb, AUTHENTICATION, "userextras")
        if self.constrained:
            if problem := _extra_problem(extra):
                raise forbidden(check, problem)
            count = sum(len(v) for v in extra.values())
            if (len(extra) >= MANY_CHECKS or count >= MANY_CHECKS) and await checks.allowed(
                check._replace(subresource="*", name="*")
            ):
                return
        for key, values in extra.items():
            for value in values:
                await checks.check(check._replace(subresource=key, name=value))


def _extra_problem(extra: dict[str, list[str]]) -> str:
    """kube's validateExtra of constrained impersonation."""
    for key, values in extra.items():
        if not key:
            return "impersonating the empty string key in extra is not allowed"
        if key != key.lower():
            return f"impersonating a non-lowercase key in extra is not allowed: {quote(key)}"
        if "" in values:
            return "impersonating the empty string value in extra is not allowed"
    return ""


MODES = tuple(Mode(name) for name in ("arbitrary-node", "serviceaccount", "user-info", "legacy"))


class Impersonation:
    def __init__(self, authorizer: Authorizer) -> None:
        self._authorizer = authorizer
        # The requestor's last successful mode (kube's modeIndexCache).
        self._last: OrderedDict[str, int] = OrderedDict()

    async def impersonate(self, request: web.Request, wanted: Wanted) -> User:
        requestor = user_of(request)
        attributes = attributes_of(request)
        checks = _Checks(self._authorizer, requestor)
        order = list(range(len(MODES)))
        if (last := self._last.get(requestor.name)) is not None:
            order.remove(last)
            order.insert(0, last)
        first: StatusError | None = None
        for index in order:
            mode = MODES[index]
            if not mode.applies(wanted):
                continue
            try:
                user = await mode.impersonate(checks, wanted, attributes)
            except StatusError as e:
                first = first or e
                continue
            self._last[requestor.name] = index
            self._last.move_to_end(requestor.name)
            if len(self._last) > REMEMBERED:
                self._last.popitem(last=False)
            return user
        raise first or errors.internal("all impersonation modes failed")


def middleware(authorizer: Authorizer) -> Middleware:
    impersonation = Impersonation(authorizer)

    @web.middleware
    async def impersonated(request: web.Request, handler: Handler) -> web.StreamResponse:
        wanted = wanted_user(request)
        if wanted is not None:
            user = await impersonation.impersonate(request, wanted)
            request[REQUESTOR] = user_of(request)
            request[USER] = user
            audit.impersonated(request, user)
        return await handler(request)

    return impersonated
