"""kube's structured authorization configuration (--authorization-config), read
and checked as kube-apiserver v1.36 checks it: every expected message below is
what kube-apiserver printed, and exited with, for the same file (recorded with
../shared/kube; kube's list of types there has three more, OpenShift's own,
which upstream's has not)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from services.gateway.authorizers import Attributes, Decision
from services.gateway.authorizers import configuration as structured
from services.gateway.authorizers.conditions import ConditionFailed
from services.gateway.user import User
from tests.support.authorization_config import configuration, webhook_settings

TYPES = '"ABAC", "AlwaysAllow", "AlwaysDeny", "Node", "RBAC", "Webhook"'
NAME_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
SYNTAX = (
    "ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', "
    "'.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
    "IDENTIFIER}\n | request.user ==\n | ...............^"
)


def _refusal(text: str) -> str:
    with pytest.raises(structured.ConfigError) as refused:
        structured.parse(structured.read(text))
    return str(refused.value)


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "wh.kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\n")
    return path


RBAC = {"type": "RBAC", "name": "rbac"}


def _authorizer_cases(kubeconfig: Path) -> list[tuple[list[dict[str, Any]], str]]:
    def hook(**changes: Any) -> dict[str, Any]:
        return {"type": "Webhook", "name": "wh", "webhook": webhook_settings(kubeconfig, **changes)}

    return [
        ([], "authorizers: Required value: at least one authorization mode must be defined"),
        ([{"name": "x"}], "authorizers[0].type: Required value"),
        (
            [{"type": "Foo", "name": "x"}],
            f'authorizers[0].type: Unsupported value: "Foo": supported values: {TYPES}',
        ),
        ([{"type": "RBAC"}], "authorizers[0].name: Required value"),
        ([hook(), {**hook(), "name": "wh"}], 'authorizers[1].name: Duplicate value: "wh"'),
        ([RBAC, RBAC], 'authorizers[1].type: Duplicate value: "RBAC"'),
        (
            [{**hook(), "name": "Bad_Name"}],
            'authorizers[0].name: Invalid value: "Bad_Name": authorizer name is invalid: '
            + NAME_RULE,
        ),
        (
            [{"type": "RBAC", "name": "rbac.example.com"}],
            "expected name rbac for authorizer RBAC instead of rbac.example.com",
        ),
        (
            [{"type": "Node", "name": "nd"}, {"type": "RBAC", "name": "rb"}],
            "[expected name node for authorizer Node instead of nd, "
            "expected name rbac for authorizer RBAC instead of rb]",
        ),
        (
            [{"type": "Webhook", "name": "wh"}],
            "authorizers[0].webhook: Required value: required when type=Webhook",
        ),
        (
            [{**RBAC, "webhook": webhook_settings(kubeconfig)}],
            'authorizers[0].webhook: Invalid value: "non-null": may only be specified when '
            "type=Webhook",
        ),
    ]


def _webhook_cases(kubeconfig: Path) -> list[tuple[list[dict[str, Any]], str]]:
    def hook(**changes: Any) -> dict[str, Any]:
        return {"type": "Webhook", "name": "wh", "webhook": webhook_settings(kubeconfig, **changes)}

    nowhere = str(kubeconfig.parent / "nope.kubeconfig")
    return [
        ([hook(timeout="0s")], "authorizers[0].timeout: Required value"),
        ([hook(timeout=None)], "authorizers[0].timeout: Required value"),
        (
            [hook(timeout="31s")],
            'authorizers[0].timeout: Invalid value: "31s": must be > 0s and <= 30s',
        ),
        (
            [hook(subjectAccessReviewVersion=None)],
            "authorizers[0].subjectAccessReviewVersion: Required value",
        ),
        (
            [hook(subjectAccessReviewVersion="v2")],
            'authorizers[0].subjectAccessReviewVersion: Unsupported value: "v2": supported '
            'values: "v1", "v1beta1"',
        ),
        (
            [
                hook(
                    matchConditionSubjectAccessReviewVersion=None,
                    matchConditions=[{"expression": "request.user == 'alice'"}],
                )
            ],
            "authorizers[0].matchConditionSubjectAccessReviewVersion: Required value: required "
            "if match conditions are specified",
        ),
        (
            [hook(matchConditionSubjectAccessReviewVersion="v1beta1")],
            "authorizers[0].matchConditionSubjectAccessReviewVersion: Unsupported value: "
            '"v1beta1": supported values: "v1"',
        ),
        ([hook(failurePolicy=None)], "authorizers[0].failurePolicy: Required value"),
        (
            [hook(failurePolicy="Foo")],
            'authorizers[0].failurePolicy: Unsupported value: "Foo": supported values: '
            '"NoOpinion", "Deny"',
        ),
        ([hook(connectionInfo={})], "authorizers[0].connectionInfo.type: Required value"),
        (
            [hook(connectionInfo={"type": "Foo"})],
            'authorizers[0].connectionInfo.type: Unsupported value: {"Type":"Foo",'
            '"KubeConfigFile":null}: supported values: "InClusterConfig", "KubeConfigFile"',
        ),
        (
            [hook(connectionInfo={"type": "KubeConfigFile"})],
            "authorizers[0].connectionInfo.kubeConfigFile: Required value",
        ),
        (
            [hook(connectionInfo={"type": "KubeConfigFile", "kubeConfigFile": "wh.kubeconfig"})],
            'authorizers[0].connectionInfo.kubeConfigFile: Invalid value: "wh.kubeconfig": '
            "must be an absolute path",
        ),
        (
            [hook(connectionInfo={"type": "KubeConfigFile", "kubeConfigFile": nowhere})],
            f'authorizers[0].connectionInfo.kubeConfigFile: Invalid value: "{nowhere}": error '
            f"loading file: stat {nowhere}: no such file or directory",
        ),
        (
            [hook(connectionInfo={"type": "InClusterConfig", "kubeConfigFile": str(kubeconfig)})],
            f'authorizers[0].connectionInfo.kubeConfigFile: Invalid value: "{kubeconfig}": can '
            "only be set when type=KubeConfigFile",
        ),
        (
            [hook(authorizedTTL="-1s", unauthorizedTTL="-1s")],
            '[authorizers[0].authorizedTTL: Invalid value: "-1s": must be > 0s, '
            'authorizers[0].unauthorizedTTL: Invalid value: "-1s": must be > 0s]',
        ),
    ]


def _condition_cases(kubeconfig: Path) -> list[tuple[list[dict[str, Any]], str]]:
    def hook(**changes: Any) -> dict[str, Any]:
        return {"type": "Webhook", "name": "wh", "webhook": webhook_settings(kubeconfig, **changes)}

    return [
        (
            [hook(matchConditions=[{"expression": ""}])],
            "authorizers[0].matchConditions[0].expression: Required value",
        ),
        (
            [hook(matchConditions=[{"expression": "request.user == 'alice'"}] * 2)],
            "authorizers[0].matchConditions[1].expression: Duplicate value: "
            "\"request.user == 'alice'\"",
        ),
        (
            [hook(matchConditions=[{"expression": "request.user =="}])],
            'authorizers[0].matchConditions[0].expression: Invalid value: "request.user ==": '
            f"compilation failed: {SYNTAX}",
        ),
        (
            [hook(matchConditions=[{"expression": "request.foo == 'x'"}])],
            "authorizers[0].matchConditions[0].expression: Invalid value: \"request.foo == 'x'\": "
            "compilation failed: ERROR: <input>:1:8: undefined field 'foo'\n"
            " | request.foo == 'x'\n | .......^",
        ),
        (
            [hook(matchConditions=[{"expression": "request.extra == 'x'"}])],
            'authorizers[0].matchConditions[0].expression: Invalid value: "request.extra == '
            "'x'\": compilation failed: ERROR: <input>:1:15: found no matching overload for "
            "'_==_' applied to '(map(string, list(string)), string)'\n"
            " | request.extra == 'x'\n | ..............^",
        ),
        (
            [hook(matchConditions=[{"expression": "request.user"}])],
            'authorizers[0].matchConditions[0].expression: Invalid value: "request.user": must '
            "evaluate to bool but got string",
        ),
        (
            [hook(matchConditions=[{"expression": f"request.user == '{i}'"} for i in range(65)])],
            "authorizers[0].matchConditions: Too many: 65: must have at most 64 items",
        ),
        (
            [
                {"type": "Foo"},
                {**RBAC, "name": "Bad_Name"},
                {"type": "RBAC", "name": "Bad_Name"},
            ],
            f'[authorizers[0].type: Unsupported value: "Foo": supported values: {TYPES}, '
            'authorizers[1].name: Invalid value: "Bad_Name": authorizer name is invalid: '
            f'{NAME_RULE}, authorizers[2].type: Duplicate value: "RBAC"]',
        ),
    ]


def test_each_problem_is_refused_in_kubes_words(kubeconfig: Path) -> None:
    cases = [
        *_authorizer_cases(kubeconfig),
        *_webhook_cases(kubeconfig),
        *_condition_cases(kubeconfig),
    ]
    for authorizers, refused in cases:
        assert _refusal(configuration(*authorizers)) == refused, authorizers


def test_the_file_is_read_strictly() -> None:
    base = configuration(RBAC)
    load = "failed to load AuthorizationConfiguration from file: "
    assert _refusal(base.replace("authorizers:", "bogus: 1\nauthorizers:")) == (
        f'{load}strict decoding error: unknown field "bogus"'
    )
    assert _refusal(base.replace("name: rbac", "name: rbac\n  bogus: 1")) == (
        f'{load}strict decoding error: unknown field "authorizers[0].bogus"'
    )
    doubled = (
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n"
        "authorizers:\n- type: RBAC\n  type: Node\n  name: rbac\n"
    )
    assert _refusal(doubled) == (
        f"{load}strict decoding error: yaml: unmarshal errors:\n"
        '  line 5: key "type" already set in map'
    )
    assert _refusal(base.replace("/v1", "/v2")) == (
        f'{load}no kind "AuthorizationConfiguration" is registered for version '
        '"apiserver.config.k8s.io/v2" in scheme "pkg/apis/apiserver/load/load.go:32"'
    )
    for version in ("v1beta1", "v1alpha1"):
        parsed = structured.parse(structured.read(base.replace("/v1", f"/{version}")))
        assert parsed == (structured.Authorizer("RBAC", "rbac"),)
    missing = Path("/nonexistent/authz.yaml")
    with pytest.raises(structured.ConfigError) as refused:
        structured.load(missing)
    assert str(refused.value) == f"open {missing}: no such file or directory"


def test_a_webhook_has_kubes_defaults_and_its_conditions(kubeconfig: Path) -> None:
    webhook = webhook_settings(kubeconfig, authorizedTTL="0s", unauthorizedTTL=None)
    webhook["matchConditions"] = [
        {"expression": "has(request.resourceAttributes)"},
        {"expression": "request.resourceAttributes.namespace == 'kube-system'"},
    ]
    (parsed, rbac) = structured.parse(
        structured.read(configuration({"type": "Webhook", "name": "wh", "webhook": webhook}, RBAC))
    )
    assert rbac == structured.Authorizer("RBAC", "rbac")
    options = parsed.webhook
    assert options is not None
    assert (options.authorized_ttl, options.unauthorized_ttl, options.timeout) == (300, 30, 3)
    assert options.decision_on_error is Decision.NO_OPINION
    assert options.cache_authorized and options.cache_unauthorized
    alice = User("alice", "", ("devs",))
    in_kube_system = Attributes(alice, "get", "", True, "", "v1", "pods", namespace="kube-system")
    elsewhere = in_kube_system._replace(namespace="default")
    assert options.conditions.match(in_kube_system)
    assert not options.conditions.match(elsewhere)
    # A non-resource request stops at the first condition (false), never reaching the second.
    assert not options.conditions.match(Attributes(alice, "get", "/healthz", False))
    failing = copy.deepcopy(webhook)
    failing["matchConditions"] = [{"expression": "request.resourceAttributes.namespace == 'x'"}]
    failing["failurePolicy"] = "Deny"
    (parsed,) = structured.parse(
        structured.read(configuration({"type": "Webhook", "name": "wh", "webhook": failing}))
    )
    assert parsed.webhook is not None
    assert parsed.webhook.decision_on_error is Decision.DENY
    with pytest.raises(ConditionFailed) as failed:
        parsed.webhook.conditions.match(Attributes(alice, "get", "/healthz/x", False))
    assert str(failed.value) == (
        "cel evaluation error: expression 'request.resourceAttributes.namespace == 'x'' "
        "resulted in error: no such key: resourceAttributes"
    )
