"""The authorization.k8s.io/v1 review APIs end to end, against a gateway run
with --authorization-mode=RBAC: SubjectAccessReview, LocalSubjectAccessReview,
SelfSubjectAccessReview and SelfSubjectRulesReview answer as kube-apiserver
v1.36 answered the same reviews (../shared/kube/with_kube.sh), refusals and
discovery included."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from strata.dev import System
from tests.support.rbac_system import GRANTS, kubectl
from tests.support.rbac_system import rbac_system as started


@pytest.fixture(scope="module")
def rbac_system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    yield from started(tmp_path_factory)


REVIEWS = "/apis/authorization.k8s.io/v1"
# kube writes the manager of a review's fields from the User-Agent.
AGENT = {"User-Agent": "Python-urllib/3.11"}


def _session(system: System, token: str) -> aiohttp.ClientSession:
    assert system.endpoints is not None
    context = ssl.create_default_context(cafile=str(system.ca_file))
    return aiohttp.ClientSession(
        base_url=system.endpoints.gateway,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **AGENT},
        connector=aiohttp.TCPConnector(ssl=context),
    )


async def _post(session: aiohttp.ClientSession, path: str, body: Any) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with session.post(path, data=data) as response:
        return response.status, await response.json()


def _without_time(review: dict[str, Any]) -> dict[str, Any]:
    for entry in review["metadata"].get("managedFields", []):
        assert entry.pop("time")
    return review


async def test_subject_access_reviews_answer_as_kube(rbac_system: System) -> None:
    applied = kubectl(rbac_system.kubeconfig, "apply", "-f", "-", stdin=GRANTS)
    assert applied.returncode == 0, applied.stderr
    async with (
        _session(rbac_system, rbac_system.admin_token) as admin,
        _session(rbac_system, "alice-token") as alice,
    ):
        spec = {
            "user": "alice",
            "uid": "u1",
            "extra": {"a": ["b"]},
            "groups": ["devs"],
            "resourceAttributes": {
                **{"namespace": "default", "verb": "get", "resource": "configmaps"},
                **{"name": "allowed", "version": "v1", "group": "", "subresource": ""},
            },
        }
        status, review = await _post(admin, f"{REVIEWS}/subjectaccessreviews", {"spec": spec})
        assert (status, _without_time(review)) == (201, KUBE_SUBJECT_ACCESS_REVIEW)

        status, review = await _post(admin, f"{REVIEWS}/subjectaccessreviews", {"spec": {}})
        assert (status, review) == (422, KUBE_EMPTY_SPEC)

        local = f"{REVIEWS}/namespaces/default/localsubjectaccessreviews"
        asked = {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "configmaps"}}
        status, review = await _post(admin, local, {"spec": asked})
        assert (status, review["message"]) == (
            422,
            '.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: '
            'Invalid value: "": must match metadata.namespace',
        )
        elsewhere = {"metadata": {"namespace": "other"}, "spec": asked}
        status, review = await _post(admin, local, elsewhere)
        assert (status, review["message"]) == (
            400,
            "the namespace of the provided object does not match the namespace sent on the request",
        )
        path = {"user": "alice", "nonResourceAttributes": {"path": "/x", "verb": "get"}}
        status, review = await _post(admin, local, {"spec": path})
        assert (status, review["message"]) == (
            422,
            '.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: '
            '{"Path":"/x","Verb":"get"}: disallowed on this kind of request',
        )
        status, review = await _post(alice, local, {"spec": asked})
        assert (status, review["message"]) == (
            403,
            'localsubjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot '
            'create resource "localsubjectaccessreviews" in API group "authorization.k8s.io" '
            'in the namespace "default"',
        )


async def test_self_reviews_and_the_group_answer_as_kube(rbac_system: System) -> None:
    async with (
        _session(rbac_system, rbac_system.admin_token) as admin,
        _session(rbac_system, "bob-token") as bob,
    ):
        url = {"nonResourceAttributes": {"path": "/api", "verb": "get"}}
        status, review = await _post(bob, f"{REVIEWS}/selfsubjectaccessreviews", {"spec": url})
        assert (status, review["status"]) == (
            201,
            {
                "allowed": True,
                "reason": 'RBAC: allowed by ClusterRoleBinding "system:discovery" of '
                'ClusterRole "system:discovery" to Group "system:authenticated"',
            },
        )
        status, review = await _post(bob, f"{REVIEWS}/selfsubjectrulesreviews", {"spec": {}})
        assert (status, review["message"]) == (400, "no namespace on request")
        rules = {"spec": {"namespace": "default"}}
        status, review = await _post(bob, f"{REVIEWS}/selfsubjectrulesreviews", rules)
        assert status == 201
        assert (review["metadata"], review["spec"], review["status"]["incomplete"]) == (
            {},
            {},
            False,
        )
        wrong = {"apiVersion": "v1", "kind": "ConfigMap"}
        status, review = await _post(bob, f"{REVIEWS}/selfsubjectaccessreviews", wrong)
        assert (status, review["message"]) == (
            400,
            'ConfigMap in version "v1" cannot be handled as a SelfSubjectAccessReview: '
            "converting (v1.ConfigMap) to (authorization.SelfSubjectAccessReview): "
            "unknown conversion",
        )

        for method, where, code in (
            ("GET", f"{REVIEWS}/subjectaccessreviews", 405),
            ("DELETE", f"{REVIEWS}/selfsubjectaccessreviews", 405),
            ("GET", f"{REVIEWS}/subjectaccessreviews/x", 404),
            ("PUT", f"{REVIEWS}/selfsubjectaccessreviews/x", 404),
            ("POST", f"{REVIEWS}/localsubjectaccessreviews", 404),
        ):
            async with admin.request(method, where, data=b"{}") as response:
                assert response.status == code, (method, where)
        async with bob.get(REVIEWS) as response:
            assert await response.json() == KUBE_DISCOVERY


KUBE_SUBJECT_ACCESS_REVIEW = {
    "kind": "SubjectAccessReview",
    "apiVersion": "authorization.k8s.io/v1",
    "metadata": {
        "managedFields": [
            {
                "manager": "Python-urllib",
                "operation": "Update",
                "apiVersion": "authorization.k8s.io/v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:spec": {
                        "f:extra": {".": {}, "f:a": {}},
                        "f:groups": {},
                        "f:resourceAttributes": {
                            ".": {},
                            "f:name": {},
                            "f:namespace": {},
                            "f:resource": {},
                            "f:verb": {},
                            "f:version": {},
                        },
                        "f:uid": {},
                        "f:user": {},
                    }
                },
            }
        ]
    },
    "spec": {
        "resourceAttributes": {
            "namespace": "default",
            "verb": "get",
            "version": "v1",
            "resource": "configmaps",
            "name": "allowed",
        },
        "user": "alice",
        "groups": ["devs"],
        "extra": {"a": ["b"]},
        "uid": "u1",
    },
    "status": {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "alice-limited/default" of Role "limited" to '
        'User "alice"',
    },
}
_EXACTLY_ONE = (
    "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be "
    "specified"
)
_USER_OR_GROUP = 'Invalid value: "": at least one of user or group must be specified'
KUBE_EMPTY_SPEC = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": f'.authorization.k8s.io "" is invalid: [spec.resourceAttributes: {_EXACTLY_ONE}, '
    f"spec.user: {_USER_OR_GROUP}]",
    "reason": "Invalid",
    "details": {
        "group": "authorization.k8s.io",
        "causes": [
            {
                "reason": "FieldValueInvalid",
                "message": _EXACTLY_ONE,
                "field": "spec.resourceAttributes",
            },
            {"reason": "FieldValueInvalid", "message": _USER_OR_GROUP, "field": "spec.user"},
        ],
    },
    "code": 422,
}
KUBE_DISCOVERY = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": "authorization.k8s.io/v1",
    "resources": [
        {
            "name": name,
            "singularName": name[:-1],
            "namespaced": name.startswith("local"),
            "kind": kind,
            "verbs": ["create"],
        }
        for name, kind in (
            ("localsubjectaccessreviews", "LocalSubjectAccessReview"),
            ("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
            ("selfsubjectrulesreviews", "SelfSubjectRulesReview"),
            ("subjectaccessreviews", "SubjectAccessReview"),
        )
    ],
}
