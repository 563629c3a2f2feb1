"""kube's audit policy as its evaluator reads it: the first matching rule
decides, by users, groups, verbs, resources (subresources, wildcards and
names), namespaces and non-resource URLs; the stages omitted are the policy's
and the rule's; and a policy kube would not load is refused at start."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from services.gateway.audit import policy
from services.gateway.audit.policy import Level, Policy
from services.gateway.authorizers import Attributes
from services.gateway.user import User

ALICE = User("alice", "", ("devs", "system:authenticated"))


def _policy(*rules: dict[str, Any], **top: Any) -> Policy:
    return policy.parse({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": rules, **top})


def _resource(
    verb: str,
    resource: str,
    *,
    group: str = "",
    namespace: str = "",
    name: str = "",
    subresource: str = "",
    user: User = ALICE,
) -> Attributes:
    return Attributes(user, verb, "/x", True, group, "v1", resource, subresource, namespace, name)


def _path(path: str, user: User = ALICE) -> Attributes:
    return Attributes(user, "get", path, False)


def _level(p: Policy, attributes: Attributes, user: User | None = ALICE) -> Level:
    return p.evaluate(attributes, user).level


def test_the_first_matching_rule_decides_and_none_is_the_default() -> None:
    p = _policy(
        {"level": "None", "users": ["system:kube-proxy"]},
        {"level": "Metadata", "resources": [{"group": "", "resources": ["secrets"]}]},
        {"level": "RequestResponse", "userGroups": ["devs"]},
    )
    assert _level(p, _resource("get", "secrets")) is Level.METADATA
    assert _level(p, _resource("get", "configmaps")) is Level.REQUEST_RESPONSE
    proxy = User("system:kube-proxy")
    assert _level(p, _resource("get", "secrets", user=proxy), proxy) is Level.NONE
    bob = User("bob", "", ("system:authenticated",))
    assert _level(p, _resource("get", "configmaps", user=bob), bob) is Level.NONE


def test_users_groups_and_verbs_must_all_match() -> None:
    p = _policy({"level": "Request", "users": ["alice"], "userGroups": ["devs"], "verbs": ["get"]})
    assert _level(p, _resource("get", "pods")) is Level.REQUEST
    assert _level(p, _resource("list", "pods")) is Level.NONE
    assert _level(p, _resource("get", "pods"), User("alice")) is Level.NONE
    # A request that failed authentication has no user: only rules naming none match it.
    assert _level(p, _resource("get", "pods"), None) is Level.NONE
    assert _level(_policy({"level": "Metadata"}), _resource("get", "pods"), None) is Level.METADATA


@pytest.mark.parametrize(
    ("resources", "attributes", "matches"),
    [
        (["deployments"], _resource("get", "deployments", group="apps"), True),
        (["deployments"], _resource("get", "deployments"), False),  # another group
        (
            ["deployments"],
            _resource("get", "deployments", group="apps", subresource="scale"),
            False,
        ),
        (
            ["deployments/scale"],
            _resource("update", "deployments", group="apps", subresource="scale"),
            True,
        ),
        (["*/scale"], _resource("update", "replicasets", group="apps", subresource="scale"), True),
        (["*/scale"], _resource("update", "replicasets", group="apps"), False),
        (
            ["deployments/*"],
            _resource("get", "deployments", group="apps", subresource="status"),
            True,
        ),
        (["deployments/*"], _resource("get", "deployments", group="apps"), True),
        (["*"], _resource("get", "anything", group="apps", subresource="status"), True),
        ([], _resource("get", "anything", group="apps"), True),  # the whole group
    ],
)
def test_resources_as_kube_matches_them(
    resources: list[str], attributes: Attributes, matches: bool
) -> None:
    p = _policy({"level": "Metadata", "resources": [{"group": "apps", "resources": resources}]})
    assert (_level(p, attributes) is Level.METADATA) is matches


def test_resource_names_and_namespaces() -> None:
    p = _policy(
        {
            "level": "Metadata",
            "namespaces": ["kube-system", ""],
            "resources": [{"resources": ["configmaps"], "resourceNames": ["cluster-info"]}],
        },
        {"level": "Request", "namespaces": ["default"]},
    )
    ns = "kube-system"
    assert (
        _level(p, _resource("get", "configmaps", namespace=ns, name="cluster-info"))
        is Level.METADATA
    )
    assert _level(p, _resource("get", "configmaps", namespace=ns, name="other")) is Level.NONE
    assert _level(p, _resource("get", "configmaps", name="cluster-info")) is Level.METADATA
    assert _level(p, _resource("create", "pods", namespace="default")) is Level.REQUEST
    # A namespaces rule is a resource rule: no path matches it.
    assert _level(p, _path("/healthz")) is Level.NONE


def test_non_resource_urls() -> None:
    p = _policy(
        {"level": "None", "nonResourceURLs": ["/healthz*", "/version"]},
        {"level": "Metadata", "nonResourceURLs": ["*"]},
    )
    assert _level(p, _path("/healthz/etcd")) is Level.NONE
    assert _level(p, _path("/version")) is Level.NONE
    assert _level(p, _path("/version/")) is Level.METADATA
    assert _level(p, _path("/openapi/v2")) is Level.METADATA
    assert _level(p, _resource("get", "pods")) is Level.NONE  # not a path rule's


def test_omitted_stages_and_managed_fields() -> None:
    p = _policy(
        {"level": "Request", "verbs": ["watch"], "omitStages": ["ResponseStarted"]},
        {"level": "Request", "verbs": ["get"], "omitManagedFields": False},
        {"level": "Request"},
        omitStages=["RequestReceived"],
        omitManagedFields=True,
    )
    watch = p.evaluate(_resource("watch", "pods"), ALICE)
    assert watch.omit_stages == {"RequestReceived", "ResponseStarted"}
    assert watch.omit_managed_fields  # the policy's
    assert not p.evaluate(_resource("get", "pods"), ALICE).omit_managed_fields  # the rule's
    assert p.evaluate(_path("/x"), ALICE).omit_stages == {"RequestReceived"}


def test_a_policy_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "rules": [{"level": "Metadata", "resources": [{"resources": ["secrets"]}]}],
            }
        )
    )
    loaded = policy.load(path)
    assert loaded.rules[0].resources == (policy.GroupResources("", ("secrets",)),)


@pytest.mark.parametrize(
    ("document", "words"),
    [
        ({"apiVersion": "audit.k8s.io/v1beta1", "kind": "Policy"}, "want apiVersion"),
        ({"rules": []}, "loaded illegal policy with 0 rules"),
        ({"rules": [{}]}, "rules[0].level: Required value"),
        ({"rules": [{"level": "Everything"}]}, 'rules[0].level: Unsupported value: "Everything"'),
        (
            {"omitStages": ["Done"], "rules": [{"level": "None"}]},
            'omitStages[0]: Unsupported value: "Done"',
        ),
        (
            {"rules": [{"level": "None", "nonResourceURLs": ["/x"], "namespaces": ["a"]}]},
            "rules cannot apply to both regular resources and non-resource URLs",
        ),
        ({"rules": [{"level": "None", "nonResourceURLs": ["x"]}]}, "must begin with a '/'"),
        (
            {"rules": [{"level": "None", "nonResourceURLs": ["/a*/b"]}]},
            "must be the final character",
        ),
        (
            {"rules": [{"level": "None", "resources": [{"resourceNames": ["a"]}]}]},
            "using resourceNames requires at least one resource",
        ),
        ({"rules": [{"level": "None", "resources": [{"group": "Apps"}]}]}, "not a DNS subdomain"),
    ],
)
def test_a_policy_kube_would_refuse_is_refused(document: dict[str, Any], words: str) -> None:
    with pytest.raises(policy.PolicyError) as refused:
        policy.parse({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", **document}, "p.yaml")
    assert words in str(refused.value)
