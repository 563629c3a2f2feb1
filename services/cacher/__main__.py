"""python -m services.cacher: the watch cache in front of the storage service."""

from __future__ import annotations

import argparse
import asyncio

import grpc

from services.cacher.storage import CachedStorage
from strata import service, telemetry
from strata.storage import GrpcStorage, StorageServicer, add_to_server


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m services.cacher", description=__doc__)
    service.flag(parser, "listen", "STRATA_CACHER_LISTEN", "127.0.0.1:2382", "gRPC address")
    service.flag(parser, "storage", "STRATA_STORAGE", "127.0.0.1:2381", "storage service address")
    args = parser.parse_args()
    telemetry.setup("strata-cacher")
    asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> None:
    channel = service.connect(args.storage)
    upstream = GrpcStorage(channel)
    cached = CachedStorage(upstream)

    async def register(server: grpc.aio.Server) -> None:
        add_to_server(StorageServicer(cached), server)

    async def stop() -> None:
        await cached.stop()
        await upstream.close()
        await channel.close()

    await service.serve(
        service_name="strata-cacher", listen=args.listen, register=register, on_stop=stop
    )


if __name__ == "__main__":
    main()
