"""RBAC as kube decides it, without a server: rules (strata.api.rbac), the
gateway's in-memory policy and RBAC authorizer, the union of modes, the
attributes the authorization step reads off a request, and the bootstrap's
reconciliation of the default policy. Reasons and messages are kube-apiserver
v1.36's, recorded from ../shared/kube."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from services.gateway.authorizers import Attributes, Decision, Rules
from services.gateway.authorizers.always_allow import AlwaysAllow
from services.gateway.authorizers.always_deny import AlwaysDeny
from services.gateway.authorizers.modes import ModeError, parse
from services.gateway.authorizers.rbac import RBAC
from services.gateway.authorizers.rbac_policy import Policy, load
from services.gateway.authorizers.reviews import Reviewer
from services.gateway.authorizers.union import Union
from services.gateway.chain.authorization import attributes_of
from services.gateway.user import USER, User
from services.registry.builtin.policy import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES
from services.registry.controllers.bootstrap import reconciled_binding, reconciled_role
from strata.api.rbac import Rule, breakdown, covers

Obj = dict[str, Any]
G = "rbac.authorization.k8s.io"


def rule(**fields: Any) -> Rule:
    return Rule.of(fields)


def test_a_rule_allows_as_kubes_rule_allows() -> None:
    scale = rule(verbs=["get"], apiGroups=["apps"], resources=["*/scale"])
    assert scale.allows_resource("get", "apps", "deployments", "scale", "web")
    assert not scale.allows_resource("get", "apps", "deployments", "", "web")
    assert not scale.allows_resource("get", "apps", "deployments", "status", "web")
    # kube has no "<resource>/*": such a rule names a subresource called "*".
    star = rule(verbs=["get"], apiGroups=["apps"], resources=["deployments/*"])
    assert not star.allows_resource("get", "apps", "deployments", "scale", "")
    assert not star.allows_resource("get", "apps", "deployments", "", "")
    named = rule(verbs=["get"], apiGroups=[""], resources=["configmaps"], resourceNames=["a"])
    assert named.allows_resource("get", "", "configmaps", "", "a")
    assert not named.allows_resource("get", "", "configmaps", "", "b")
    assert not named.allows_resource("get", "", "configmaps", "", "")  # a list is not named
    everything = rule(verbs=["*"], apiGroups=["*"], resources=["*"])
    assert everything.allows_resource("escalate", "x.io", "things", "sub", "n")
    assert not everything.allows_path("get", "/healthz")
    urls = rule(verbs=["get"], nonResourceURLs=["/metrics", "/logs/*", "/a**"])
    assert urls.allows_path("get", "/metrics")
    assert not urls.allows_path("get", "/metrics/")
    assert urls.allows_path("get", "/logs/")
    assert urls.allows_path("get", "/logs/x/y")
    assert not urls.allows_path("get", "/logs")
    assert urls.allows_path("get", "/abc")
    assert not urls.allows_path("post", "/metrics")
    assert not urls.allows_resource("get", "", "metrics", "", "")


def test_covers_breaks_the_rules_down_as_kube() -> None:
    owner = [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "*/status"]},
        {"verbs": ["get"], "nonResourceURLs": ["/logs/*"]},
    ]
    assert covers(owner, [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/status"]}])[0]
    assert covers(owner, [{"verbs": ["get"], "nonResourceURLs": ["/logs/a"]}])[0]
    named = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["x"]}
    assert covers(owner, [named])[0]
    assert not covers([named], [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])[0]
    wanted = {"verbs": ["get", "watch"], "apiGroups": ["", "apps"], "resources": ["pods"]}
    ok, missing = covers(owner, [wanted])
    assert not ok
    assert missing == [
        {"verbs": ["watch"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]},
        {"verbs": ["watch"], "apiGroups": ["apps"], "resources": ["pods"]},
    ]
    assert breakdown({"verbs": ["get", "post"], "nonResourceURLs": ["/a"]}) == [
        {"verbs": ["get"], "nonResourceURLs": ["/a"]},
        {"verbs": ["post"], "nonResourceURLs": ["/a"]},
    ]


def _meta(name: str, namespace: str = "") -> Obj:
    return {"name": name, "namespace": namespace} if namespace else {"name": name}


def role(name: str, rules: list[Obj], namespace: str = "") -> Obj:
    kind = "Role" if namespace else "ClusterRole"
    return {"kind": kind, "metadata": _meta(name, namespace), "rules": rules}


def binding(name: str, ref: tuple[str, str], subjects: list[Obj], namespace: str = "") -> Obj:
    kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    return {
        "kind": kind,
        "metadata": _meta(name, namespace),
        "roleRef": {"apiGroup": G, "kind": ref[0], "name": ref[1]},
        "subjects": subjects,
    }


def user(name: str) -> Obj:
    return {"kind": "User", "apiGroup": G, "name": name}


def group(name: str) -> Obj:
    return {"kind": "Group", "apiGroup": G, "name": name}


# The roles of the e2e test (tests/e2e/test_rbac.py), and kube's default policy.
LIMITED = role(
    "limited",
    [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["allowed"],
            "verbs": ["get", "update", "delete"],
        },
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["get", "patch", "update"]},
        {"apiGroups": ["batch"], "resources": ["*"], "verbs": ["*"]},
    ],
    namespace="default",
)
ALICE = User("alice", "", ("devs", "system:authenticated"))
BOB = User("bob", "", ("system:authenticated",))


def policy(*objects: Obj) -> Policy:
    made = Policy()
    load(made, [*CLUSTER_ROLES, *CLUSTER_ROLE_BINDINGS, *objects])
    return made


def resource(who: User, verb: str, resource: str, namespace: str = "", **more: str) -> Attributes:
    return Attributes(who, verb, "", True, resource=resource, namespace=namespace, **more)


async def test_rbac_allows_what_a_binding_grants_with_kubes_reasons() -> None:
    rbac = RBAC(
        policy(LIMITED, binding("alice-limited", ("Role", "limited"), [user("alice")], "default"))
    )
    allowed = await rbac.authorize(resource(ALICE, "get", "configmaps", "default", name="allowed"))
    assert allowed == (
        Decision.ALLOW,
        'RBAC: allowed by RoleBinding "alice-limited/default" of Role "limited" to User "alice"',
    )
    for refused in (
        resource(ALICE, "get", "configmaps", "default", name="other"),
        resource(ALICE, "get", "configmaps", "kube-system", name="allowed"),
        resource(ALICE, "create", "configmaps", "default"),
        resource(BOB, "list", "configmaps", "default"),
        resource(ALICE, "get", "deployments", "default", api_group="apps", name="web"),
    ):
        assert await rbac.authorize(refused) == (Decision.NO_OPINION, "")
    for granted in (
        resource(ALICE, "list", "configmaps", "default"),
        resource(ALICE, "patch", "deployments", "default", api_group="apps", subresource="scale"),
        resource(ALICE, "deletecollection", "cronjobs", "default", api_group="batch"),
    ):
        assert (await rbac.authorize(granted))[0] is Decision.ALLOW
    discovery = await rbac.authorize(Attributes(BOB, "get", "/apis/apps", False))
    assert discovery == (
        Decision.ALLOW,
        'RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole '
        '"system:discovery" to Group "system:authenticated"',
    )
    assert (await rbac.authorize(Attributes(BOB, "get", "/metrics", False)))[0] is (
        Decision.NO_OPINION
    )


async def test_bindings_to_missing_roles_are_the_reason() -> None:
    rbac = RBAC(
        policy(
            binding("bob-missing", ("Role", "nothere"), [user("bob")], "default"),
            binding("bob-missing", ("ClusterRole", "nothere2"), [user("bob")]),
            binding("bob-missing3", ("ClusterRole", "nothere3"), [user("bob")], "default"),
        )
    )
    assert await rbac.authorize(resource(BOB, "list", "pods", "default")) == (
        Decision.NO_OPINION,
        'RBAC: [clusterrole.rbac.authorization.k8s.io "nothere2" not found, '
        'role.rbac.authorization.k8s.io "nothere" not found, '
        'clusterrole.rbac.authorization.k8s.io "nothere3" not found]',
    )
    assert await rbac.authorize(resource(BOB, "list", "pods", "kube-system")) == (
        Decision.NO_OPINION,
        'RBAC: clusterrole.rbac.authorization.k8s.io "nothere2" not found',
    )


async def test_service_accounts_groups_and_changes() -> None:
    reader = role("reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])
    made = policy(
        reader,
        # A ServiceAccount with no namespace is the binding's own.
        binding(
            "robots", ("ClusterRole", "reader"), [{"kind": "ServiceAccount", "name": "r"}], "a"
        ),
        binding("ops", ("ClusterRole", "reader"), [group("ops"), user("carol")]),
    )
    rbac = RBAC(made)
    robot = User("system:serviceaccount:a:r", "", ("system:serviceaccounts",))
    assert await rbac.authorize(resource(robot, "get", "pods", "a")) == (
        Decision.ALLOW,
        'RBAC: allowed by RoleBinding "robots/a" of ClusterRole "reader" to ServiceAccount "r/a"',
    )
    assert (await rbac.authorize(resource(robot, "get", "pods", "b")))[0] is Decision.NO_OPINION
    carol = User("carol", "", ("ops",))
    # The first of the binding's subjects that is the user.
    assert (await rbac.authorize(resource(carol, "get", "pods", "x")))[1].endswith('to Group "ops"')
    _, cluster_roles, _, cluster_bindings = made.feeds
    cluster_bindings.delete(binding("ops", ("ClusterRole", "reader"), []))
    assert (await rbac.authorize(resource(carol, "get", "pods", "x")))[0] is Decision.NO_OPINION
    cluster_bindings.add(binding("carol", ("ClusterRole", "reader"), [user("carol")]))
    assert (await rbac.authorize(resource(carol, "get", "pods", "x")))[0] is Decision.ALLOW
    cluster_roles.update(role("reader", [{"apiGroups": [""], "resources": ["x"], "verbs": ["*"]}]))
    assert (await rbac.authorize(resource(carol, "get", "pods", "x")))[0] is Decision.NO_OPINION
    cluster_bindings.replace([])
    assert made.granted(carol, "x") == ()


def test_a_rules_review_lists_what_kube_lists() -> None:
    rules = RBAC(policy()).rules_for(BOB, "default")
    # kube's SelfSubjectRulesReview for bob (less OpenShift's own
    # system:openshift:public-info-viewer), in any order: kube's is its informers'.
    key = str
    assert sorted(map(key, rules.resource)) == sorted(
        map(
            key,
            [
                {
                    "verbs": ["create"],
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                },
                {
                    "verbs": ["create"],
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                },
            ],
        )
    )
    assert sorted(map(key, rules.non_resource)) == sorted(
        map(
            key,
            [
                {
                    "verbs": ["get"],
                    "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
                },
                {
                    "verbs": ["get"],
                    "nonResourceURLs": [
                        *("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez"),
                        *("/openapi", "/openapi/*", "/readyz", "/version", "/version/"),
                    ],
                },
            ],
        )
    )
    assert (rules.incomplete, rules.errors) == (False, ())


async def test_the_union_asks_in_order_behind_the_superuser_group() -> None:
    admin = User("strata-admin", "", ("system:masters",))
    asked = resource(BOB, "get", "pods", "default")
    assert await Union([AlwaysDeny()]).authorize(asked._replace(user=admin)) == (
        Decision.ALLOW,
        "",
    )
    assert await Union([AlwaysDeny()]).authorize(asked) == (
        Decision.NO_OPINION,
        "Everything is forbidden.",
    )
    assert (await Union([RBAC(policy()), AlwaysAllow()]).authorize(asked))[0] is Decision.ALLOW
    assert await Union([AlwaysDeny(), AlwaysDeny()]).authorize(asked) == (
        Decision.NO_OPINION,
        "Everything is forbidden.\nEverything is forbidden.",
    )
    everything = Union([AlwaysDeny(), AlwaysAllow()]).rules_for(BOB, "default")
    assert everything == Rules(
        [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    )


async def test_a_review_is_answered_by_the_union() -> None:
    reviewer = Reviewer(Union([RBAC(policy())]))
    spec = {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}
    assert await reviewer.access(BOB, spec) == {"allowed": False}
    spec = {"nonResourceAttributes": {"path": "/api", "verb": "get"}}
    assert await reviewer.access(User("bob", "", ("system:masters",)), spec) == {"allowed": True}
    missing = RBAC(policy(binding("m", ("ClusterRole", "gone"), [user("bob")])))
    status = Reviewer(Union([missing])).rules(BOB, "default")
    assert status["evaluationError"] == 'clusterrole.rbac.authorization.k8s.io "gone" not found'
    assert status["incomplete"] is False


def test_modes_are_checked_as_kube_checks_them() -> None:
    assert parse("RBAC,AlwaysAllow").modes == ("RBAC", "AlwaysAllow")
    with pytest.raises(ModeError) as refused:
        parse("RBAC,Node,RBAC")
    assert str(refused.value).splitlines() == [
        'authorization-mode "Node" is not a valid mode',
        'authorization-mode ["RBAC" "Node" "RBAC"] has mode specified more than once',
    ]
    with pytest.raises(ModeError, match="Webhook's authorization config file not passed"):
        parse("Webhook")
    with pytest.raises(ModeError, match="at least one authorization-mode must be passed"):
        parse("")


@pytest.mark.parametrize(
    ("method", "path", "verb", "namespace", "name"),
    [
        ("GET", "/api/v1/namespaces/a/pods/p", "get", "a", "p"),
        ("HEAD", "/api/v1/namespaces/a/pods/p", "get", "a", "p"),
        ("GET", "/api/v1/namespaces/a/pods", "list", "a", ""),
        ("GET", "/api/v1/namespaces/a/pods?watch=true", "watch", "a", ""),
        ("GET", "/api/v1/watch/namespaces/a/pods/p", "watch", "a", "p"),
        ("GET", "/api/v1/namespaces/a/pods?fieldSelector=metadata.name%3Dp", "list", "a", "p"),
        ("GET", "/api/v1/pods?watch=1&fieldSelector=metadata.name%3D%3Dp", "watch", "", "p"),
        ("GET", "/api/v1/pods?fieldSelector=metadata.name%21%3Dp", "list", "", ""),
        ("POST", "/api/v1/namespaces/a/pods/p", "create", "a", "p"),
        ("DELETE", "/api/v1/namespaces/a/pods", "deletecollection", "a", ""),
        ("DELETE", "/api/v1/namespaces/a/pods/p", "delete", "a", "p"),
        ("GET", "/api/v1/namespaces/default", "get", "default", "default"),
        ("PUT", "/api/v1/namespaces/x/finalize", "update", "x", "x"),
    ],
)
def test_the_attributes_are_kubes_request_info(
    method: str, path: str, verb: str, namespace: str, name: str
) -> None:
    request = make_mocked_request(method, path)
    request[USER] = BOB
    attributes = attributes_of(request)
    assert (attributes.verb, attributes.namespace, attributes.name) == (verb, namespace, name)
    assert attributes.resource_request


def test_reconciling_adds_what_the_default_lacks_and_keeps_the_rest() -> None:
    expected = next(r for r in CLUSTER_ROLES if r["metadata"]["name"] == "system:basic-user")
    existing = {
        **expected,
        "metadata": {**expected["metadata"], "labels": {"kubernetes.io/bootstrapping": "mine"}},
        "rules": [
            {"verbs": ["*"], "apiGroups": ["authorization.k8s.io"], "resources": ["*"]},
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
        ],
    }
    done = reconciled_role(existing, expected)
    assert done["metadata"]["labels"] == {"kubernetes.io/bootstrapping": "mine"}
    assert done["rules"] == [
        *existing["rules"],
        {
            "verbs": ["create"],
            "apiGroups": ["authentication.k8s.io"],
            "resources": ["selfsubjectreviews"],
        },
    ]
    protected = {**existing, "metadata": {"name": "x", "annotations": {
        "rbac.authorization.kubernetes.io/autoupdate": "false"}}}  # fmt: skip
    assert reconciled_role(protected, expected) is protected
    admin = next(b for b in CLUSTER_ROLE_BINDINGS if b["metadata"]["name"] == "cluster-admin")
    assert (
        reconciled_binding({**admin, "roleRef": {**admin["roleRef"], "name": "x"}}, admin) is None
    )
    widened = reconciled_binding({**admin, "subjects": [user("root")]}, admin)
    assert widened is not None
    assert widened["subjects"] == [user("root"), group("system:masters")]
