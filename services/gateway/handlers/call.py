"""One resource request as the router hands it to its verb's handler, and what
every handler asks of the gateway: the registry, the open watches, admission,
and the authorizer's answers to what the registry asks in the middle of a
write (RBAC's escalation checks: services/registry/generic/requester.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from aiohttp import web

from services.gateway import paths, user
from services.gateway.admission import Admission, Attributes, Operation
from services.gateway.catalog import APIResource
from services.gateway.watches import RegistryWatches
from strata.api import errors
from strata.proto.registry.v1 import registry_pb2
from strata.registry_client import RegistryClient

# How many times a write is sent again with answers: a check asks what it
# needs at once, and a write holds one check (two rounds would do).
_ANSWERED_ROUNDS = 4
Write = TypeVar("Write", registry_pb2.CreateRequest, registry_pb2.UpdateRequest)


class Answerer(Protocol):
    """The gateway's authorizer, answering a question the registry asked of it."""

    async def answer(
        self, who: user.User, question: registry_pb2.Question
    ) -> registry_pb2.Answer: ...


def requester(who: user.User) -> registry_pb2.Requester:
    """who, as the registry learns who a write is for."""
    message = registry_pb2.Requester(name=who.name, uid=who.uid, groups=who.groups)
    for key, values in who.extra:
        message.extra[key].values.extend(values)
    return message


@dataclass
class Backend:
    registry: RegistryClient
    watches: RegistryWatches
    # The admission plugins the app enabled (none today).
    admission: Admission
    answerer: Answerer
    # Set on shutdown: a watch that ends then ends for the server, not its client.
    closing: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    request: web.Request
    info: paths.RequestInfo
    # The resource info names, as the catalog serves it.
    api: APIResource
    ref: registry_pb2.ResourceRef
    backend: Backend

    @property
    def registry(self) -> RegistryClient:
        return self.backend.registry

    async def create(self, message: registry_pb2.CreateRequest) -> registry_pb2.ObjectResponse:
        """The registry's Create, for the request's user."""
        return await self._answered(self.registry.Create, message)

    async def update(self, message: registry_pb2.UpdateRequest) -> registry_pb2.ObjectResponse:
        """The registry's Update (a PUT or a patch), for the request's user."""
        return await self._answered(self.registry.Update, message)

    async def _answered(
        self,
        send: Callable[[Write], Awaitable[registry_pb2.ObjectResponse]],
        message: Write,
    ) -> registry_pb2.ObjectResponse:
        """send's answer to message, sent again with the authorizer's answers
        for as long as the registry asks questions."""
        who = user.of(self.request)
        message.requester.CopyFrom(requester(who))
        for _ in range(_ANSWERED_ROUNDS):
            answer = await send(message)
            if not answer.questions:
                return answer
            for question in answer.questions:
                given = await self.backend.answerer.answer(who, question)
                message.requester.answers.append(given)
        raise errors.internal("the registry kept asking the authorizer")

    async def admitted(self, operation: Operation, obj: bytes, dry_run: bool) -> bytes:
        """obj (JSON; empty for a delete) as the admission plugins let it be written."""
        admission = self.backend.admission
        if not admission.enabled:
            return obj
        info = self.info
        attributes = Attributes(
            operation=operation,
            user=user.of(self.request),
            group=info.group,
            version=info.version,
            resource=info.resource,
            subresource=info.subresource,
            namespace=info.namespace,
            name=info.name,
            dry_run=dry_run,
        )
        return await admission.review(attributes, obj)


# A verb's handler.
Handler = Callable[[Call], Awaitable[web.StreamResponse]]
