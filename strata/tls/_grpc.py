"""Mutual TLS on a gRPC hop: the credentials each side presents, and the check
of who is calling, made before any servicer code runs. The handshake already
refuses a peer with no certificate or one strata's CA did not sign; the check
refuses a strata service that is not among the callers a service serves."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from typing import Any, TypeVar, cast

import grpc

from strata import grpc_handlers, telemetry
from strata.tls._hops import Identity

Req = TypeVar("Req")
Res = TypeVar("Res")
Behavior = Callable[..., Any]

# Whether a service is up is no secret, and probes (make run's, a cluster's)
# ask it with any of strata's certificates.
_OPEN_PREFIX = "/grpc.health.v1.Health/"

log = telemetry.get_logger("strata.tls")


def server_credentials(identity: Identity) -> grpc.ServerCredentials:
    return grpc.ssl_server_credentials(
        [(identity.key, identity.cert)], root_certificates=identity.ca, require_client_auth=True
    )


def channel_credentials(identity: Identity) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=identity.ca, private_key=identity.key, certificate_chain=identity.cert
    )


def channel_options(contract: str) -> list[tuple[str, str]]:
    """The server is checked to serve contract (a DNS name its certificate
    holds), whatever host or address it was dialled at."""
    return [("grpc.ssl_target_name_override", contract)]


def caller(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The CommonName of the calling peer's certificate ("" without one)."""
    names = context.auth_context().get("x509_common_name") or [b""]
    return next(iter(names)).decode(errors="replace")


class AllowedCallers(grpc.aio.ServerInterceptor):
    """Runs a call only if the peer's certificate names one of callers; any
    other call ends PERMISSION_DENIED before its handler starts."""

    def __init__(self, service: str, callers: Collection[str]) -> None:
        self.service = service
        self.callers = frozenset(callers)
        # method -> (the handler as given, the same behind the check)
        self._checked: dict[str, tuple[Any, Any]] = {}

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Req, Res] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Req, Res] | None:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(_OPEN_PREFIX):
            return handler
        known = self._checked.get(method)
        if known is not None and known[0] is handler:
            return cast("grpc.RpcMethodHandler[Req, Res]", known[1])
        checked: grpc.RpcMethodHandler[Req, Res] = self._wrap(handler, method)
        self._checked[method] = (handler, checked)
        return checked

    async def _refuse_stranger(
        self, context: grpc.aio.ServicerContext[Any, Any], method: str
    ) -> None:
        name = caller(context)
        if name in self.callers:
            return
        log.warning("refused", caller=name, method=method, peer=context.peer())
        await context.abort(
            grpc.StatusCode.PERMISSION_DENIED, f"{name or 'a peer'} may not call {self.service}"
        )

    def _wrap(self, handler: grpc.RpcMethodHandler[Req, Res], method: str) -> Any:
        return grpc_handlers.rewrapped(handler, lambda b: self._checked_behavior(b, method))

    def _checked_behavior(self, behavior: Behavior, method: str) -> Behavior:
        """behavior after the check, in its own shape: gRPC tells a handler
        that yields its answers from one that returns them by that shape."""
        refuse = self._refuse_stranger
        if inspect.isasyncgenfunction(behavior):

            async def stream(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
                await refuse(context, method)
                responses: AsyncIterator[Any] = behavior(request, context)
                async for response in responses:
                    yield response

            return stream

        async def unary(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            await refuse(context, method)
            return await cast(Awaitable[Any], behavior(request, context))

        return unary
