"""python -m services.cacher: the watch cache in front of the storage service."""

from __future__ import annotations

import argparse

import grpc
from aiohttp import web

from services.cacher import metrics
from services.cacher.storage import CachedStorage
from strata import service, telemetry
from strata.metrics_http import serve_metrics
from strata.storage import SERVICE_NAME, GrpcStorage, StorageServicer, add_to_server


def window_sizes(text: str) -> dict[str, tuple[int, int]]:
    """--watch-cache-sizes: "resource[.group]#lower:upper,..." -> resource root ->
    (lower, upper) bounds of that resource's event window."""
    sizes: dict[str, tuple[int, int]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, bounds = item.partition("#")
        lower, _, upper = bounds.partition(":")
        if not name or not lower.isdigit() or not (upper or lower).isdigit():
            raise ValueError(f"invalid watch cache size {item!r}: use resource[.group]#lower:upper")
        low, high = int(lower), int(upper or lower)
        if not 0 < low <= high:
            raise ValueError(f"invalid watch cache size {item!r}: need 0 < lower <= upper")
        resource, _, group = name.partition(".")
        sizes[f"/{group}/{resource}/" if group else f"/{resource}/"] = (low, high)
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m services.cacher", description=__doc__)
    service.flag(parser, "listen", "STRATA_CACHER_LISTEN", "127.0.0.1:2382", "gRPC address")
    service.flag(parser, "storage", "STRATA_STORAGE", "127.0.0.1:2381", "storage service address")
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
        "event window bounds per resource, resource[.group]#lower:upper,... (default 100:102400)",
    )
    args = parser.parse_args()
    try:
        args.bookmark_frequency = service.parse_duration(args.bookmark_frequency)
        args.watch_cache_sizes = window_sizes(args.watch_cache_sizes)
    except ValueError as e:
        parser.error(str(e))
    telemetry.setup("strata-cacher")
    service.run(_run(args))


async def _run(args: argparse.Namespace) -> None:
    channel = service.connect(args.storage)
    upstream = GrpcStorage(channel)
    cached = CachedStorage(
        upstream,
        window_sizes=args.watch_cache_sizes,
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
        register=register,
        on_stop=stop,
        readiness={SERVICE_NAME: cached.readiness()},
    )


if __name__ == "__main__":
    main()
