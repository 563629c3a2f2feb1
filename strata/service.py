"""What every strata gRPC service does the same way: flags that also read
environment variables, a traced grpc.aio server with the standard health
service behind mutual TLS (strata.tls: only the callers it serves get past
the check), traced mutual-TLS channels to other services, a clean stop on
SIGTERM/SIGINT, and the event loop they all run on."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import grpc
import uvloop
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from strata import protowire, telemetry, tls

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]
# A service that restarted is reached again within a couple of seconds: gRPC's
# own reconnect backoff grows to two minutes, far longer than a restart takes.
RECONNECT_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
]


T = TypeVar("T")
S = TypeVar("S")


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run a service's main coroutine on uvloop: its transports (TLS above all)
    and callbacks cost a fraction of asyncio's pure-Python ones, which is most of
    what fanning a watch event out to many clients costs."""
    return uvloop.run(main)


def flag(parser: argparse.ArgumentParser, name: str, env: str, default: str, help: str) -> None:
    """A --name flag whose default comes from the environment variable env."""
    parser.add_argument(
        f"--{name}", default=os.environ.get(env, default), help=f"{help} (env {env})"
    )


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_SCALE = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# The units a flag's duration may have.
_FLAG_UNITS = frozenset({"ms", "s", "m", "h"})


def parse_duration(text: str, *, go: bool = False) -> float:
    """Seconds in a Go-style duration ("5m", "1h30m", "250ms", "45s"); for a
    flag "0" (and "") is 0. go: as a configuration file's metav1.Duration
    (a leading "-", and ns, us and µs too; a unit always)."""
    if not go:
        text = text.strip()
        if text in ("0", ""):
            return 0.0
    sign, digits = (-1.0, text[1:]) if go and text.startswith("-") else (1.0, text)
    parts = _DURATION.findall(digits)
    if (
        not parts
        or "".join(n + u for n, u in parts) != digits
        or (not go and any(unit not in _FLAG_UNITS for _, unit in parts))
    ):
        raise ValueError(f"invalid duration {text!r}: use for example 30s, 5m or 1h")
    return sign * sum(float(number) * _SCALE[unit] for number, unit in parts)


def tls_flags(parser: argparse.ArgumentParser, service: str) -> None:
    """The flags of a service's identity on strata's gRPC hops and, for a
    service that serves, of the callers it serves (strata.tls.CALLERS)."""
    made = "made by `strata pki` or `make run`"
    flag(parser, "grpc-ca-file", "STRATA_GRPC_CA_FILE", "", f"strata's internal CA ({made})")
    flag(
        parser,
        "grpc-cert-file",
        "STRATA_GRPC_CERT_FILE",
        "",
        f"this service's certificate for the gRPC hops, signed by --grpc-ca-file ({made})",
    )
    flag(parser, "grpc-key-file", "STRATA_GRPC_KEY_FILE", "", "the key of --grpc-cert-file")
    if service in tls.CALLERS:
        flag(
            parser,
            "grpc-allowed-clients",
            f"STRATA_{service.upper()}_GRPC_ALLOWED_CLIENTS",
            ",".join(tls.CALLERS[service]),
            "comma-separated CommonNames of the client certificates whose calls are served",
        )


def tls_identity(args: argparse.Namespace, program: str) -> tls.Identity:
    """The identity tls_flags gave, or the process stops saying what is missing."""
    given = {"ca": args.grpc_ca_file, "cert": args.grpc_cert_file, "key": args.grpc_key_file}
    missing = [f"--grpc-{name}-file" for name, path in given.items() if not path]
    if missing:
        raise SystemExit(
            f"{program}: {', '.join(missing)} required: strata's gRPC hops are mutual TLS "
            "(`strata pki` makes the certificates)"
        )
    try:
        return tls.Identity.read(Path(given["ca"]), Path(given["cert"]), Path(given["key"]))
    except OSError as e:
        raise SystemExit(f"{program}: {e}") from None


def allowed_clients(args: argparse.Namespace) -> frozenset[str]:
    return frozenset(filter(None, (n.strip() for n in args.grpc_allowed_clients.split(","))))


def connect(address: str, identity: tls.Identity, contract: str) -> grpc.aio.Channel:
    """A mutual-TLS channel to another strata service that serves contract
    (tls.STORAGE_CONTRACT, tls.REGISTRY_CONTRACT), carrying trace context."""
    channel = grpc.aio.secure_channel(
        address,
        tls.channel_credentials(identity),
        options=[*_CHANNEL_OPTIONS, *RECONNECT_OPTIONS, *tls.channel_options(contract)],
    )
    return telemetry.traced_channel(channel)


class _Capture:
    """Stands in for a server to collect a generated add_*_to_server's handlers."""

    def __init__(self) -> None:
        self.handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}

    def add_generic_rpc_handlers(self, _: object) -> None:
        pass

    def add_registered_method_handlers(
        self, _: str, handlers: dict[str, grpc.RpcMethodHandler[Any, Any]]
    ) -> None:
        self.handlers = dict(handlers)


def add_servicer(
    add: Callable[[S, Any], None],
    servicer: S,
    server: grpc.aio.Server,
    name: str,
    answering_bytes: Collection[str],
) -> None:
    """Register servicer as the generated add (add_XServicer_to_server) would,
    except that the streaming methods named in answering_bytes send what they
    yield as it is: wire bytes they wrote themselves (strata.protowire)."""
    capture = _Capture()
    add(servicer, capture)
    handlers = capture.handlers
    for method in answering_bytes:
        generated = handlers[method]
        if generated.stream_stream is not None:
            handlers[method] = grpc.stream_stream_rpc_method_handler(
                generated.stream_stream,
                request_deserializer=generated.request_deserializer,
                response_serializer=protowire.identity,
            )
        elif generated.unary_stream is not None:
            handlers[method] = grpc.unary_stream_rpc_method_handler(
                generated.unary_stream,
                request_deserializer=generated.request_deserializer,
                response_serializer=protowire.identity,
            )
        else:
            raise ValueError(f"{name}/{method} does not stream its answers")
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, handlers),))
    server.add_registered_method_handlers(name, handlers)


async def wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def mirror_readiness(
    health_servicer: health.aio.HealthServicer, name: str, changes: AsyncIterator[bool]
) -> None:
    """Report name on health as changes say: NOT_SERVING until the first True."""
    await health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    async for ready in changes:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if ready
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        await health_servicer.set(name, status)


async def always_ready() -> AsyncIterator[bool]:
    """The readiness of a part that is ready once it serves."""
    yield True


# The health service name under which storage, and each hop above it, reports
# whether etcd answers (the gateway's /readyz has it as kube's "etcd" check).
ETCD_READINESS = "etcd"
READINESS_POLL_SECONDS = 1.0


async def polled_readiness(
    check: Callable[[], Awaitable[bool]], interval: float = READINESS_POLL_SECONDS
) -> AsyncIterator[bool]:
    """check's answer each time it changes, asked every interval (an exception,
    or no answer within interval, is not ready)."""
    last: bool | None = None
    while True:
        try:
            async with asyncio.timeout(interval):
                ready = await check()
        except Exception:  # whatever kept it from answering: not ready
            ready = False
        if ready is not last:
            yield ready
            last = ready
        await asyncio.sleep(interval)


def relayed_readiness(channel: grpc.aio.Channel, name: str) -> AsyncIterator[bool]:
    """The readiness the service behind channel reports for name: a hop passes
    on what the one below it knows (etcd's, from storage up to the gateway)."""
    health = health_pb2_grpc.HealthStub(channel)
    request = health_pb2.HealthCheckRequest(service=name)

    async def check() -> bool:
        answer = await health.Check(request)
        return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)

    return polled_readiness(check)


async def serve(
    *,
    service_name: str,
    listen: str,
    identity: tls.Identity,
    callers: Collection[str],
    register: Callable[[grpc.aio.Server], Awaitable[None]],
    on_stop: Callable[[], Awaitable[None]] | None = None,
    readiness: Mapping[str, AsyncIterator[bool]] | None = None,
) -> None:
    """Run a gRPC server until SIGTERM/SIGINT, over mutual TLS as identity,
    serving only callers (CommonNames of certificates strata's CA signed).

    register adds the service's servicers; health reports SERVING for "" once it
    returns. readiness maps further health service names to the changes of their
    readiness, which health reports as SERVING or NOT_SERVING.
    """
    log = telemetry.get_logger(service_name)
    interceptors = [*telemetry.server_interceptors(), tls.AllowedCallers(service_name, callers)]
    server = grpc.aio.server(interceptors=interceptors, options=_CHANNEL_OPTIONS)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    port = server.add_secure_port(listen, tls.server_credentials(identity))
    if port == 0:
        raise SystemExit(f"{service_name}: cannot listen on {listen}")
    await register(server)
    mirrors = [
        asyncio.create_task(mirror_readiness(health_servicer, name, changes))
        for name, changes in (readiness or {}).items()
    ]
    await server.start()
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    log.info("serving", listen=listen, port=port, callers=sorted(callers))
    try:
        await wait_for_signal()
    finally:
        log.info("stopping")
        for task in mirrors:
            task.cancel()
        await health_servicer.enter_graceful_shutdown()
        await server.stop(grace=2)
        if on_stop is not None:
            await on_stop()
        telemetry.shutdown()
