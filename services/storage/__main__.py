"""python -m services.storage: the storage service on a real etcd."""

from __future__ import annotations

import argparse
import asyncio

import grpc

from services.storage.store import DEFAULT_PROGRESS_INTERVAL_SECONDS, EtcdStorage
from strata import service, telemetry
from strata.etcd import Etcd
from strata.proto.storage.v1 import storage_pb2_grpc
from strata.storage import StorageServicer


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m services.storage", description=__doc__)
    service.flag(parser, "listen", "STRATA_STORAGE_LISTEN", "127.0.0.1:2381", "gRPC address")
    service.flag(parser, "etcd", "STRATA_ETCD", "127.0.0.1:2379", "etcd endpoint host:port")
    service.flag(parser, "etcd-prefix", "STRATA_ETCD_PREFIX", "/registry", "key prefix in etcd")
    service.flag(
        parser,
        "watch-progress-interval",
        "STRATA_WATCH_PROGRESS_INTERVAL",
        str(DEFAULT_PROGRESS_INTERVAL_SECONDS),
        "seconds between BOOKMARKs on idle watches that ask for progress",
    )
    args = parser.parse_args()
    telemetry.setup("strata-storage")
    asyncio.run(_run(args))


async def _run(args: argparse.Namespace) -> None:
    etcd = Etcd(args.etcd)

    async def register(server: grpc.aio.Server) -> None:
        storage = EtcdStorage(
            etcd,
            prefix=args.etcd_prefix,
            progress_interval_seconds=float(args.watch_progress_interval),
        )
        storage_pb2_grpc.add_StorageServicer_to_server(StorageServicer(storage), server)

    await service.serve(
        service_name="strata-storage", listen=args.listen, register=register, on_stop=etcd.close
    )


if __name__ == "__main__":
    main()
