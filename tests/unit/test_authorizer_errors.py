"""An authorizer that cannot decide (a webhook that cannot be asked), as kube's
union and its callers treat one: the chain goes on past an error of no opinion
and a later allow wins; nobody allowing makes the errors the union's (the
request's 500); an error of the Deny policy ends the chain; a review reports
it as its evaluationError; impersonation and the registry's questions take it
for what its decision says."""

from __future__ import annotations

import pytest

from services.gateway.authorizers import (
    NO_RULES,
    Attributes,
    AuthorizerError,
    Decision,
    Rules,
    decided,
)
from services.gateway.authorizers.always_allow import AlwaysAllow
from services.gateway.authorizers.always_deny import AlwaysDeny
from services.gateway.authorizers.reviews import Reviewer
from services.gateway.authorizers.union import Union
from services.gateway.user import User


class Failing:
    def __init__(self, message: str, decision: Decision = Decision.NO_OPINION) -> None:
        self._message, self._decision = message, decision

    async def authorize(self, attributes: Attributes) -> tuple[Decision, str]:
        raise AuthorizerError(self._message, self._decision)

    def rules_for(self, user: User, namespace: str) -> Rules:
        return NO_RULES


ALICE = User("alice", "", ("devs",))
GET = Attributes(ALICE, "get", "", True, "", "v1", "configmaps", namespace="default")


async def test_an_error_of_no_opinion_passes_the_request_on() -> None:
    assert await Union([Failing("down"), AlwaysAllow()]).authorize(GET) == (Decision.ALLOW, "")
    with pytest.raises(AuthorizerError) as failed:
        await Union([Failing("one"), AlwaysDeny(), Failing("two")]).authorize(GET)
    assert str(failed.value) == "[one, two]"
    assert (failed.value.decision, failed.value.reason) == (
        Decision.NO_OPINION,
        "Everything is forbidden.",
    )


async def test_an_error_of_the_deny_policy_ends_the_chain() -> None:
    union = Union([Failing("down", Decision.DENY), AlwaysAllow()])
    with pytest.raises(AuthorizerError) as failed:
        await union.authorize(GET)
    assert failed.value.decision is Decision.DENY
    assert await decided(union, GET) == (Decision.DENY, "")
    # The superuser group is never asked about.
    masters = GET._replace(user=User("admin", "", ("system:masters",)))
    assert await union.authorize(masters) == (Decision.ALLOW, "")


async def test_a_review_reports_the_error() -> None:
    reviewer = Reviewer(Union([Failing("down")]))
    spec = {"resourceAttributes": {"verb": "get", "resource": "configmaps"}}
    assert await reviewer.access(ALICE, spec) == {"allowed": False, "evaluationError": "down"}
