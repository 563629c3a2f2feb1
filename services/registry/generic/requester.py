"""Who a write is made by, and what the gateway's authorizer said of them: what
kube's registry finds on a request's context (user.Info, RequestInfo) and asks
its authorizer in the middle of a write (RBAC's escalation checks).

The authorizer is the gateway's, one hop away, so the registry cannot ask it
midway: a check that needs an answer it was not sent raises `Unanswered`
with its questions, the write stops before anything is stored, and the
gateway sends the request again with the answers (the registry server turns
`Unanswered` into ObjectResponse.questions). A write is tried from the start
again, so a check may ask everything it might need at once, saving rounds.

The requester of the write being made is a context variable, set by the
registry server around the call: None is the registry's own controllers
(kube's loopback client, which is in system:masters)."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from strata.proto.registry.v1 import registry_pb2

# kube's user.SystemPrivilegedGroup: may do anything, escalation included.
PRIVILEGED_GROUP = "system:masters"


@dataclass(frozen=True, slots=True)
class Access:
    """A resource request the authorizer is asked about (any API version)."""

    verb: str
    api_group: str
    resource: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""


@dataclass(frozen=True, slots=True)
class RulesIn:
    """What the requester may do in namespace ("" for cluster-wide alone)."""

    namespace: str


Question = Access | RulesIn


@dataclass(frozen=True, slots=True)
class Rules:
    """The answer to RulesIn: PolicyRules, and the errors met listing them."""

    rules: list[dict[str, Any]]
    errors: tuple[str, ...] = ()


class Unanswered(Exception):
    """A write needs the authorizer's answers to questions before it can go on."""

    def __init__(self, questions: list[Question]) -> None:
        super().__init__(f"{len(questions)} questions for the authorizer")
        self.questions = questions


@dataclass(frozen=True)
class Requester:
    """The user a write is made by, the request's namespace and name (kube's
    RequestInfo: the name is "" for a POST), and the answers the gateway sent."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    namespace: str = ""
    request_name: str = ""
    answers: Mapping[Question, bool | Rules] = field(default_factory=dict)

    @property
    def privileged(self) -> bool:
        """kube's EscalationAllowed: a member of system:masters."""
        return PRIVILEGED_GROUP in self.groups

    def allowed(self, access: Access) -> bool:
        answer = self.answers.get(access)
        if not isinstance(answer, bool):
            raise Unanswered([access])
        return answer

    def rules(self, namespace: str) -> Rules:
        answer = self.answers.get(RulesIn(namespace))
        if not isinstance(answer, Rules):
            raise Unanswered([RulesIn(namespace)])
        return answer

    def unanswered(self, *questions: Question) -> None:
        """Unanswered with those of questions not answered yet, if any."""
        missing = [q for q in questions if q not in self.answers]
        if missing:
            raise Unanswered(missing)


_current: contextvars.ContextVar[Requester | None] = contextvars.ContextVar(
    "strata_registry_requester", default=None
)


def current() -> Requester | None:
    """The requester of the write being made; None for the registry's own."""
    return _current.get()


@contextlib.contextmanager
def acting_for(requester: Requester | None) -> Iterator[None]:
    token = _current.set(requester)
    try:
        yield
    finally:
        _current.reset(token)


# --- the wire --------------------------------------------------------------------


def _question_of(message: registry_pb2.Question) -> Question | None:
    if message.HasField("access"):
        a = message.access
        return Access(a.verb, a.api_group, a.resource, a.namespace, a.name, a.subresource)
    if message.HasField("rules"):
        return RulesIn(message.rules.namespace)
    return None


def question_message(question: Question) -> registry_pb2.Question:
    if isinstance(question, RulesIn):
        return registry_pb2.Question(rules=registry_pb2.RulesQuestion(namespace=question.namespace))
    return registry_pb2.Question(
        access=registry_pb2.AccessAttributes(
            verb=question.verb,
            api_group=question.api_group,
            resource=question.resource,
            subresource=question.subresource,
            namespace=question.namespace,
            name=question.name,
        )
    )


def _rules_of(answer: registry_pb2.Answer) -> Rules:
    try:
        rules = orjson.loads(answer.rules) if answer.rules else []
    except orjson.JSONDecodeError:
        rules = []
    if not isinstance(rules, list):
        rules = []
    kept = [rule for rule in rules if isinstance(rule, dict)]
    return Rules(kept, tuple(answer.errors))


def requester_of(message: registry_pb2.Requester, namespace: str, request_name: str) -> Requester:
    answers: dict[Question, bool | Rules] = {}
    for answer in message.answers:
        question = _question_of(answer.question)
        if isinstance(question, Access):
            answers[question] = answer.allowed
        elif isinstance(question, RulesIn):
            answers[question] = _rules_of(answer)
    return Requester(
        name=message.name,
        groups=tuple(message.groups),
        uid=message.uid,
        namespace=namespace,
        request_name=request_name,
        answers=answers,
    )
