"""What the registry asks the gateway's authorizer in the middle of a write
(services/registry/generic/requester.py): whether the requester may do
something (kube's registry asks its authorizer for `escalate` and `bind`), and
what the requester may do in a namespace (kube's RBAC rule resolver, which its
escalation checks compare a role's rules with). The handlers send a write
again with these answers (services/gateway/handlers/call.py)."""

from __future__ import annotations

import orjson

from services.gateway.authorizers import Attributes, Decision, Mode, decided
from services.gateway.user import User
from strata.proto.registry.v1 import registry_pb2


class Questions:
    def __init__(self, authorizer: Mode) -> None:
        self._authorizer = authorizer

    async def answer(self, who: User, question: registry_pb2.Question) -> registry_pb2.Answer:
        if question.HasField("access"):
            asked = question.access
            decision, _ = await decided(
                self._authorizer,
                Attributes(
                    who,
                    asked.verb,
                    "",
                    True,
                    api_group=asked.api_group,
                    api_version="*",
                    resource=asked.resource,
                    subresource=asked.subresource,
                    namespace=asked.namespace,
                    name=asked.name,
                ),
            )
            return registry_pb2.Answer(question=question, allowed=decision is Decision.ALLOW)
        if question.HasField("rules"):
            rules = self._authorizer.rules_for(who, question.rules.namespace)
            return registry_pb2.Answer(
                question=question,
                rules=orjson.dumps([*rules.resource, *rules.non_resource]),
                errors=rules.errors,
            )
        # A question this gateway does not know: answered as nothing allowed.
        return registry_pb2.Answer(question=question)
