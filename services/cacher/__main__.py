"""python -m services.cacher: the watch cache in front of the storage service."""

from __future__ import annotations

import argparse
import re

import grpc
from aiohttp import web

from services.cacher import metrics
from services.cacher.storage import UNCACHED, CachedStorage
from services.cacher.window import fresh_seconds
from strata import service, telemetry, tls
from strata.metrics_http import serve_metrics
from strata.storage import SERVICE_NAME, GrpcStorage, StorageServicer, add_to_server, key_root


def uncached_roots(text: str, default: frozenset[str] = UNCACHED) -> frozenset[str]:
    """kube's --watch-cache-sizes, "resource[.group]#size,...": a size of 0 turns
    the resource's watch cache off, any other size turns it on (kube sizes every
    cache itself); resources not named keep the default (events' off). The
    resource roots whose reads go to storage."""
    roots = set(default)
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, hash_, size = item.partition("#")
        if not hash_ or "#" in size:
            raise ValueError(f"invalid value of watch cache size: {item}")
        if not re.fullmatch(r"[+-]?[0-9]+", size):  # Go's strconv.Atoi
            raise ValueError(f"invalid size of watch cache size: {item}")
        number = int(size)
        if number < 0:
            raise ValueError(f"watch cache size cannot be negative: {item}")
        resource, _, group = name.partition(".")
        # events.k8s.io's events are the core events' store, in kube as here.
        root = "/events/" if (resource, group) == ("events", "events.k8s.io") else None
        root = root or key_root(group, resource)
        if number == 0:
            roots.add(root)
        else:
            roots.discard(root)
    return frozenset(roots)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m services.cacher", description=__doc__)
    service.flag(parser, "listen", "STRATA_CACHER_LISTEN", "127.0.0.1:2382", "gRPC address")
    service.flag(parser, "storage", "STRATA_STORAGE", "127.0.0.1:2381", "storage service address")
    service.tls_flags(parser, "cacher")
    service.flag(
        parser,
        "metrics-listen",
        "STRATA_CACHER_METRICS_LISTEN",
        "",
        "address serving Prometheus /metrics (empty: none)",
    )
    service.flag(
        parser,
        "bookmark-frequency",
        "STRATA_CACHER_BOOKMARK_FREQUENCY",
        "1m",
        "how often a watcher that allows bookmarks gets one",
    )
    service.flag(
        parser,
        "watch-cache-sizes",
        "STRATA_WATCH_CACHE_SIZES",
        "",
        "kube's resource[.group]#size,...: 0 turns a resource's watch cache off, any other "
        "size on (events' is off unless named)",
    )
    service.flag(
        parser,
        "request-timeout",
        # The gateway's variable: one setting keeps the two in step.
        "STRATA_GATEWAY_REQUEST_TIMEOUT",
        "60s",
        "the gateway's --request-timeout: watch caches keep events for the longer of 75s and "
        "this plus 15s, as kube-apiserver's",
    )
    args = parser.parse_args()
    try:
        args.bookmark_frequency = service.parse_duration(args.bookmark_frequency)
        args.uncached = uncached_roots(args.watch_cache_sizes)
        args.fresh_seconds = fresh_seconds(service.parse_duration(args.request_timeout))
    except ValueError as e:
        parser.error(str(e))
    args.identity = service.tls_identity(args, "strata-cacher")
    telemetry.setup("strata-cacher")
    service.run(_run(args))


async def _run(args: argparse.Namespace) -> None:
    channel = service.connect(args.storage, args.identity, tls.STORAGE_CONTRACT)
    upstream = GrpcStorage(channel)
    cached = CachedStorage(
        upstream,
        fresh_seconds=args.fresh_seconds,
        uncached=args.uncached,
        bookmark_frequency=args.bookmark_frequency,
    )
    runners: list[web.AppRunner] = []

    async def register(server: grpc.aio.Server) -> None:
        add_to_server(StorageServicer(cached), server)
        if args.metrics_listen:
            runners.append(await serve_metrics(args.metrics_listen, metrics.REGISTRY))

    async def stop() -> None:
        for runner in runners:
            await runner.cleanup()
        await cached.stop()
        await upstream.close()
        await channel.close()

    await service.serve(
        service_name="strata-cacher",
        listen=args.listen,
        identity=args.identity,
        callers=service.allowed_clients(args),
        register=register,
        on_stop=stop,
        readiness={
            SERVICE_NAME: cached.readiness(),
            service.ETCD_READINESS: service.relayed_readiness(channel, service.ETCD_READINESS),
        },
    )


if __name__ == "__main__":
    main()
