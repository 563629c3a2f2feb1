"""python -m services.storage: the storage service on a real etcd.

`python -m services.storage reencrypt` rewrites every stale value with the
first configured encryption provider and exits (see services.storage.reencrypt).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import grpc

from services.storage.encryption import ConfigError, Transformers, load_config
from services.storage.reencrypt import reencrypt
from services.storage.store import DEFAULT_PROGRESS_INTERVAL_SECONDS, EtcdStorage
from strata import service, telemetry
from strata.etcd import Etcd
from strata.proto.storage.v1 import storage_pb2_grpc
from strata.storage import StorageServicer


def _common_flags(parser: argparse.ArgumentParser) -> None:
    service.flag(parser, "etcd", "STRATA_ETCD", "127.0.0.1:2379", "etcd endpoint host:port")
    service.flag(parser, "etcd-prefix", "STRATA_ETCD_PREFIX", "/registry", "key prefix in etcd")
    service.flag(
        parser,
        "encryption-provider-config",
        "STRATA_ENCRYPTION_CONFIG",
        "",
        "kube EncryptionConfiguration file for encryption at rest",
    )


def _transformers(path: str) -> Transformers | None:
    """The configured transformers; a bad file stops the process with its message."""
    if not path:
        return None
    try:
        return Transformers(load_config(Path(path)))
    except ConfigError as e:
        raise SystemExit(f"strata-storage: invalid encryption configuration: {e}") from None


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["reencrypt"]:
        return _reencrypt_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m services.storage", description=__doc__)
    service.flag(parser, "listen", "STRATA_STORAGE_LISTEN", "127.0.0.1:2381", "gRPC address")
    _common_flags(parser)
    service.flag(
        parser,
        "watch-progress-interval",
        "STRATA_WATCH_PROGRESS_INTERVAL",
        str(DEFAULT_PROGRESS_INTERVAL_SECONDS),
        "seconds between BOOKMARKs on idle watches that ask for progress",
    )
    args = parser.parse_args(argv)
    transformers = _transformers(args.encryption_provider_config)
    telemetry.setup("strata-storage")
    asyncio.run(_run(args, transformers))


async def _run(args: argparse.Namespace, transformers: Transformers | None) -> None:
    etcd = Etcd(args.etcd)

    async def register(server: grpc.aio.Server) -> None:
        storage = EtcdStorage(
            etcd,
            prefix=args.etcd_prefix,
            progress_interval_seconds=float(args.watch_progress_interval),
            transformers=transformers,
        )
        storage_pb2_grpc.add_StorageServicer_to_server(StorageServicer(storage), server)

    await service.serve(
        service_name="strata-storage", listen=args.listen, register=register, on_stop=etcd.close
    )


def _reencrypt_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="strata storage reencrypt",
        description="Rewrite every stale value with the first configured encryption provider.",
    )
    _common_flags(parser)
    args = parser.parse_args(argv)
    transformers = _transformers(args.encryption_provider_config)
    if transformers is None:
        raise SystemExit("strata storage reencrypt: --encryption-provider-config is required")

    async def run() -> int:
        etcd = Etcd(args.etcd)
        try:
            report = await reencrypt(etcd, args.etcd_prefix, transformers)
        finally:
            await etcd.close()
        print(report.summary())
        for problem in report.unreadable:
            print(f"unreadable: {problem}", file=sys.stderr)
        return 1 if report.unreadable else 0

    raise SystemExit(asyncio.run(run()))


if __name__ == "__main__":
    main()
