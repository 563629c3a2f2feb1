"""The pure parts of RBAC's escalation prevention: kube's CompactRules and
CompactString over what Covers leaves missing (the expected lines are kube
v1.36's refusal for the same rules), what counts as a garbage collector's
change, and the questions and answers the registry and the gateway trade."""

from __future__ import annotations

from typing import Any

import orjson

from services.registry.builtin.rbac_escalation import only_gc_fields
from services.registry.generic import requester
from services.registry.generic.requester import Access, Rules, RulesIn, Unanswered
from strata.api.rbac import compact, compact_string, covers
from strata.proto.registry.v1 import registry_pb2

# What kube's default policy gives alice that matters here: GET /healthz.
HELD = [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version"]}]
WANTED: list[dict[str, Any]] = [
    {"nonResourceURLs": ["/healthz", "/metrics"], "verbs": ["get", "post"]},
    {"apiGroups": ["apps", ""], "resources": ["deployments", "pods"], "verbs": ["get", "list"]},
    {"apiGroups": [""], "resources": ["pods"], "resourceNames": ["a", "b"], "verbs": ["delete"]},
]


def test_missing_rules_are_listed_as_kube_lists_them() -> None:
    held, missing = covers(HELD, WANTED)
    assert not held
    assert sorted({compact_string(rule) for rule in compact(missing)}) == [
        '{APIGroups:[""], Resources:["deployments"], Verbs:["get" "list"]}',
        '{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["delete"]}',
        '{APIGroups:[""], Resources:["pods"], ResourceNames:["b"], Verbs:["delete"]}',
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}',
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}',
        '{APIGroups:["apps"], Resources:["pods"], Verbs:["get" "list"]}',
        '{NonResourceURLs:["/healthz"], Verbs:["post"]}',
        '{NonResourceURLs:["/metrics"], Verbs:["get"]}',
        '{NonResourceURLs:["/metrics"], Verbs:["post"]}',
    ]
    assert covers([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}], WANTED[1:])[0]


def test_only_the_garbage_collectors_fields_are_no_escalation() -> None:
    old: dict[str, Any] = {"metadata": {"name": "r", "labels": {"a": "b"}}, "rules": WANTED}
    gc = {"metadata": {"name": "r", "labels": {"a": "b"}, "finalizers": ["x.io/y"]}}
    assert only_gc_fields({**old, **gc}, old)
    owned = {"metadata": {**old["metadata"], "ownerReferences": [{"uid": "u"}]}}
    assert only_gc_fields({**old, **owned}, old)
    relabelled = {"metadata": {"name": "r", "labels": {"a": "c"}}}
    assert not only_gc_fields({**old, **relabelled}, old)
    assert not only_gc_fields({**old, "rules": []}, old)


def test_questions_and_answers_cross_the_wire() -> None:
    escalate = Access("escalate", "rbac.authorization.k8s.io", "roles", "esc", "big")
    message = registry_pb2.Requester(name="alice", uid="u", groups=["devs"])
    asking = requester.requester_of(message, "esc", "big")
    try:
        asking.unanswered(escalate, RulesIn("esc"))
        raise AssertionError("nothing was answered yet")
    except Unanswered as e:
        assert e.questions == [escalate, RulesIn("esc")]
    rules = [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]
    for question, answer in (
        (escalate, registry_pb2.Answer(allowed=True)),
        (RulesIn("esc"), registry_pb2.Answer(rules=orjson.dumps(rules), errors=["x"])),
    ):
        answer.question.CopyFrom(requester.question_message(question))
        message.answers.append(answer)
    asked = requester.requester_of(message, "esc", "big")
    asked.unanswered(escalate, RulesIn("esc"))
    assert asked.allowed(escalate)
    assert asked.rules("esc") == Rules(rules, ("x",))
    assert (asked.name, asked.groups, asked.namespace, asked.request_name) == (
        "alice",
        ("devs",),
        "esc",
        "big",
    )
    assert not asked.privileged
    assert requester.requester_of(
        registry_pb2.Requester(groups=["system:masters"]), "", ""
    ).privileged
