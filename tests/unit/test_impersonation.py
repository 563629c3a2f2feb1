"""The impersonation step on a real aiohttp server, against an authorizer that
grants what each test says: the user a request acts as, and kube's refusals.

Every message and user below is kube-apiserver v1.36's for the same request,
recorded with ../shared/kube (users alice and bob with no bindings, then alice
bound to the impersonate verb on users/bob): kube tries its constrained
impersonation modes (impersonate-on:<mode>:<verb>) before the legacy
impersonate checks, and answers the first refusal, starting with the mode
that last worked for the requestor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from services.gateway import chain
from services.gateway.authorizers import Attributes, Decision
from services.gateway.chain import authentication
from services.gateway.chain.metrics import RequestMetrics
from services.gateway.handlers.whoami import self_subject_review
from services.gateway.user import User

WHOAMI = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
Grant = tuple[str, str, str, str, str]  # user, verb, API group, resource, name


class Grants:
    """system:masters may do anything; anyone else what was granted, and a
    SelfSubjectReview (as kube's system:basic-user grants everyone)."""

    def __init__(self) -> None:
        self.granted: set[Grant] = set()

    async def authorize(self, a: Attributes) -> tuple[Decision, str]:
        resource = a.resource + (f"/{a.subresource}" if a.subresource else "")
        asked = (a.user.name, a.verb, a.api_group, resource, a.name)
        whoami = (a.verb, a.resource) == ("create", "selfsubjectreviews")
        if "system:masters" in a.user.groups or asked in self.granted or whoami:
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""


async def _ok(_: web.Request) -> web.Response:
    return web.json_response({})


@pytest.fixture
async def served() -> AsyncIterator[tuple[aiohttp.ClientSession, Grants]]:
    grants = Grants()
    users = {"alice-token": User("alice", "", ("devs",)), "bob-token": User("bob")}
    app = web.Application(
        middlewares=chain.middlewares(
            metrics=RequestMetrics(),
            authenticate=authentication.authenticator("admin-token", users),
            authorizer=grants,
            bounds=chain.Limits(),
        )
    )
    app.router.add_route("*", WHOAMI, self_subject_review)
    app.router.add_route("*", "/api/{tail:.+}", _ok)
    app.router.add_get("/healthz", _ok)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    async with aiohttp.ClientSession(base_url=str(server.make_url(""))) as session:
        yield session, grants
    await server.close()


async def _as(
    session: aiohttp.ClientSession, token: str, headers: list[tuple[str, str]]
) -> tuple[int, dict[str, Any]]:
    sent = [("Authorization", f"Bearer {token}"), *headers]
    async with session.post(WHOAMI, headers=sent, json={}) as response:
        return response.status, await response.json()


async def _refusal(
    session: aiohttp.ClientSession, path: str, headers: list[tuple[str, str]]
) -> tuple[int, str]:
    sent = [("Authorization", "Bearer alice-token"), *headers]
    async with session.get(path, headers=sent) as response:
        return response.status, (await response.json())["message"]


@pytest.mark.parametrize(
    ("headers", "user"),
    [
        ([("Impersonate-User", "bob")], {"username": "bob", "groups": ["system:authenticated"]}),
        (
            [
                ("Impersonate-User", "bob"),
                ("Impersonate-Group", "g1"),
                ("Impersonate-Group", "g2"),
                ("Impersonate-Uid", "u1"),
                ("Impersonate-Extra-Scopes", "a"),
                ("Impersonate-Extra-Scopes", "b"),
                ("Impersonate-Extra-Foo%2Fbar", "c"),
            ],
            {
                "username": "bob",
                "uid": "u1",
                "groups": ["g1", "g2", "system:authenticated"],
                "extra": {"foo/bar": ["c"], "scopes": ["a", "b"]},
            },
        ),
        (
            [("Impersonate-User", "system:serviceaccount:default:sa2")],
            {
                "username": "system:serviceaccount:default:sa2",
                "groups": [
                    "system:serviceaccounts",
                    "system:serviceaccounts:default",
                    "system:authenticated",
                ],
            },
        ),
        (
            [
                ("Impersonate-User", "system:serviceaccount:default:sa2"),
                ("Impersonate-Group", "g1"),
            ],
            {
                "username": "system:serviceaccount:default:sa2",
                "groups": ["g1", "system:authenticated"],
            },
        ),
        (
            [("Impersonate-User", "system:node:n1")],
            {"username": "system:node:n1", "groups": ["system:nodes", "system:authenticated"]},
        ),
        (
            [("Impersonate-User", "system:node:n1"), ("Impersonate-Group", "g")],
            {"username": "system:node:n1", "groups": ["g", "system:authenticated"]},
        ),
        (
            [("Impersonate-User", "bob"), ("Impersonate-Group", "system:authenticated")],
            {"username": "bob", "groups": ["system:authenticated"]},
        ),
        (
            [("Impersonate-User", "system:serviceaccount:bad")],
            {"username": "system:serviceaccount:bad", "groups": ["system:authenticated"]},
        ),
        # An empty Impersonate-User asks for nothing.
        (
            [("Impersonate-User", "")],
            {"username": "strata-admin", "groups": ["system:masters", "system:authenticated"]},
        ),
    ],
)
async def test_the_admin_acts_as_anyone(
    served: tuple[aiohttp.ClientSession, Grants],
    headers: list[tuple[str, str]],
    user: dict[str, Any],
) -> None:
    session, _ = served
    status, review = await _as(session, "admin-token", headers)
    assert status == 201
    assert review["status"]["userInfo"] == user


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        (
            [("Impersonate-Group", "g1")],
            'requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"g1"}, '
            "Extra:map[string][]string(nil)} without impersonating a user name",
        ),
        (
            [("Impersonate-Uid", "u1")],
            'requested &user.DefaultInfo{Name:"", UID:"u1", Groups:[]string(nil), '
            "Extra:map[string][]string(nil)} without impersonating a user name",
        ),
    ],
)
async def test_impersonating_no_user_is_400(
    served: tuple[aiohttp.ClientSession, Grants], headers: list[tuple[str, str]], message: str
) -> None:
    session, _ = served
    status, body = await _as(session, "admin-token", headers)
    assert (status, body["reason"], body["message"]) == (400, "BadRequest", message)


async def test_a_user_without_the_impersonate_verb_is_refused(
    served: tuple[aiohttp.ClientSession, Grants],
) -> None:
    session, _ = served
    cases = [
        (
            CONFIGMAPS,
            [("Impersonate-User", "bob")],
            'configmaps is forbidden: User "alice" cannot impersonate-on:user-info:list resource '
            '"configmaps" in API group "" in the namespace "default"',
        ),
        (
            CONFIGMAPS,
            [("Impersonate-User", "system:serviceaccount:default:sa2")],
            'configmaps is forbidden: User "alice" cannot impersonate-on:serviceaccount:list '
            'resource "configmaps" in API group "" in the namespace "default"',
        ),
        (
            "/api/v1/nodes",
            [("Impersonate-User", "system:node:n1")],
            'nodes is forbidden: User "alice" cannot impersonate-on:arbitrary-node:list resource '
            '"nodes" in API group "" at the cluster scope',
        ),
        (
            "/healthz",
            [("Impersonate-User", "bob")],
            'forbidden: User "alice" cannot impersonate-on:user-info:get path "/healthz"',
        ),
        (
            f"{CONFIGMAPS}/x",
            [("Impersonate-User", "bob")],
            'configmaps "x" is forbidden: User "alice" cannot impersonate-on:user-info:get '
            'resource "configmaps" in API group "" in the namespace "default"',
        ),
    ]
    for path, headers, message in cases:
        assert await _refusal(session, path, headers) == (403, message)


async def test_the_impersonate_verb_allows_exactly_what_it_names(
    served: tuple[aiohttp.ClientSession, Grants],
) -> None:
    session, grants = served
    grants.granted.add(("alice", "impersonate", "", "users", "bob"))
    # alice acts as bob, who may not list configmaps.
    assert await _refusal(session, CONFIGMAPS, [("Impersonate-User", "bob")]) == (
        403,
        'configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" '
        'in the namespace "default"',
    )
    # kube now tries legacy impersonation first for alice: its refusals.
    cases = [
        (
            [("Impersonate-Group", "g1")],
            'groups "g1" is forbidden: User "alice" cannot impersonate resource "groups" in API '
            'group "" at the cluster scope',
        ),
        (
            [("Impersonate-Uid", "u1")],
            'uids.authentication.k8s.io "u1" is forbidden: User "alice" cannot impersonate '
            'resource "uids" in API group "authentication.k8s.io" at the cluster scope',
        ),
        (
            [("Impersonate-Extra-Scopes", "a")],
            'userextras.authentication.k8s.io "a" is forbidden: User "alice" cannot impersonate '
            'resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster '
            "scope",
        ),
    ]
    for more, message in cases:
        headers = [("Impersonate-User", "bob"), *more]
        assert await _refusal(session, CONFIGMAPS, headers) == (403, message)
    assert await _refusal(session, CONFIGMAPS, [("Impersonate-User", "carol")]) == (
        403,
        'users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API '
        'group "" at the cluster scope',
    )


async def test_constrained_impersonation_grants(
    served: tuple[aiohttp.ClientSession, Grants],
) -> None:
    """KEP 5284: impersonate-on:<mode>:<verb> on the request, impersonate:<mode>
    on the user, in authentication.k8s.io. (The system:masters refusal is
    kube's code's, not recorded: kube's default policy grants no such verb.)"""
    session, grants = served
    grants.granted |= {
        (
            "alice",
            "impersonate-on:user-info:create",
            "authentication.k8s.io",
            "selfsubjectreviews",
            "",
        ),
        ("alice", "impersonate:user-info", "authentication.k8s.io", "users", "bob"),
    }
    status, review = await _as(session, "alice-token", [("Impersonate-User", "bob")])
    assert status == 201
    assert review["status"]["userInfo"] == {"username": "bob", "groups": ["system:authenticated"]}
    # system:masters is never impersonated this way.
    grants.granted.add(("alice", "impersonate:user-info", "authentication.k8s.io", "groups", "*"))
    status, body = await _as(
        session,
        "alice-token",
        [("Impersonate-User", "bob"), ("Impersonate-Group", "system:masters")],
    )
    assert (status, body["message"]) == (
        403,
        'groups.authentication.k8s.io "system:masters" is forbidden: User "alice" cannot '
        'impersonate:user-info resource "groups" in API group "authentication.k8s.io" at the '
        "cluster scope: impersonating the system:masters group is not allowed",
    )
