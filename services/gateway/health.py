"""/healthz, /livez and /readyz as kube-apiserver answers them: named checks,
`?verbose` for one line per check, `?exclude=<name>` to skip one, and
`/<endpoint>/<check>` for a single check. /readyz also asks the registry
whether it is serving and whether the watch caches under it have synced.
As in kube (whose health checks are plain handlers on its mux), every method
gets the same answer: a POST /healthz is 200 `ok`, a HEAD its headers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import grpc
from aiohttp import web
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata.api.wire import REGISTRY_SERVICE_NAME
from strata.service import ETCD_READINESS

# A check answers None when healthy, otherwise why not.
Check = Callable[[], Awaitable[str | None]]
_TIMEOUT_SECONDS = 2.0
_HEADERS = {"X-Content-Type-Options": "nosniff"}


@dataclass(frozen=True)
class NamedCheck:
    name: str
    check: Check


async def ping() -> str | None:
    return None


def serving(health: health_pb2_grpc.HealthStub, service: str, what: str) -> Check:
    """A check that health reports service as SERVING."""

    async def check() -> str | None:
        try:
            answer = await health.Check(
                health_pb2.HealthCheckRequest(service=service), timeout=_TIMEOUT_SECONDS
            )
        except grpc.aio.AioRpcError as e:
            return f"{what}: {e.code().name}: {e.details()}"
        if answer.status != health_pb2.HealthCheckResponse.SERVING:
            return f"{what}: {health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)}"
        return None

    return check


def readyz_checks(health: health_pb2_grpc.HealthStub) -> list[NamedCheck]:
    return [
        NamedCheck("ping", ping),
        # kube's etcd check: etcd answers (storage asks it; each hop passes it on).
        NamedCheck("etcd", serving(health, ETCD_READINESS, "etcd is not reachable")),
        NamedCheck("registry", serving(health, "", "the registry is not serving")),
        NamedCheck(
            "watch-cache",
            serving(health, REGISTRY_SERVICE_NAME, "the watch caches have not synced"),
        ),
    ]


def _text(body: str, status: int = 200) -> web.Response:
    return web.Response(
        text=body, status=status, content_type="text/plain", charset="utf-8", headers=_HEADERS
    )


def add_routes(router: web.UrlDispatcher, endpoint: str, checks: Sequence[NamedCheck]) -> None:
    """/<endpoint> running every check, and /<endpoint>/<name> for each one,
    whatever the method."""

    async def all_checks(request: web.Request) -> web.Response:
        excluded = set(request.query.getall("exclude", []))
        lines, failed = [], False
        for named in checks:
            if named.name in excluded:
                lines.append(f"[+]{named.name} excluded: ok")
                excluded.discard(named.name)
                continue
            if await named.check() is None:
                lines.append(f"[+]{named.name} ok")
            else:
                failed = True
                lines.append(f"[-]{named.name} failed: reason withheld")
        if excluded:
            names = ", ".join(sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {names}")
        report = "".join(f"{line}\n" for line in lines)
        if failed:
            return _text(f"{report}{endpoint} check failed\n", 500)
        if "verbose" in request.query:
            return _text(f"{report}{endpoint} check passed\n")
        return _text("ok")

    def one_check(named: NamedCheck) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(_: web.Request) -> web.Response:
            reason = await named.check()
            if reason is not None:
                return _text(f"internal server error: {reason}\n", 500)
            return _text("ok")

        return handle

    router.add_route("*", f"/{endpoint}", all_checks)
    for named in checks:
        router.add_route("*", f"/{endpoint}/{named.name}", one_check(named))
