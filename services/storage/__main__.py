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
from aiohttp import web

from services.storage.compactor import Compactor
from services.storage.encryption import ConfigError, Transformers, load_config
from services.storage.metrics import REGISTRY, ObjectCounter
from services.storage.reencrypt import reencrypt
from services.storage.store import DEFAULT_PROGRESS_INTERVAL_SECONDS, EtcdStorage
from strata import service, telemetry
from strata.etcd import Etcd, EtcdTLS
from strata.metrics_http import serve_metrics
from strata.storage import SERVICE_NAME, StorageServicer, add_to_server


def _common_flags(parser: argparse.ArgumentParser) -> None:
    service.flag(
        parser,
        "etcd",
        "STRATA_ETCD",
        "127.0.0.1:2379",
        "etcd endpoints, comma-separated host:port (https:// for TLS)",
    )
    service.flag(parser, "etcd-cafile", "STRATA_ETCD_CAFILE", "", "CA of etcd's certificate")
    service.flag(parser, "etcd-certfile", "STRATA_ETCD_CERTFILE", "", "client certificate for etcd")
    service.flag(parser, "etcd-keyfile", "STRATA_ETCD_KEYFILE", "", "client key for etcd")
    service.flag(
        parser,
        "etcd-request-timeout",
        "STRATA_ETCD_REQUEST_TIMEOUT",
        "10s",
        "deadline of each etcd request",
    )
    service.flag(parser, "etcd-prefix", "STRATA_ETCD_PREFIX", "/registry", "key prefix in etcd")
    service.flag(
        parser,
        "encryption-provider-config",
        "STRATA_ENCRYPTION_CONFIG",
        "",
        "kube EncryptionConfiguration file for encryption at rest",
    )


def _etcd(args: argparse.Namespace) -> Etcd:
    tls = None
    if args.etcd_cafile or args.etcd_certfile or args.etcd_keyfile:
        tls = EtcdTLS(
            ca_file=Path(args.etcd_cafile) if args.etcd_cafile else None,
            cert_file=Path(args.etcd_certfile) if args.etcd_certfile else None,
            key_file=Path(args.etcd_keyfile) if args.etcd_keyfile else None,
        )
    return Etcd(
        args.etcd, tls=tls, request_timeout=service.parse_duration(args.etcd_request_timeout)
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
    service.tls_flags(parser, "storage")
    _common_flags(parser)
    service.flag(
        parser,
        "watch-progress-interval",
        "STRATA_WATCH_PROGRESS_INTERVAL",
        str(DEFAULT_PROGRESS_INTERVAL_SECONDS),
        "seconds between BOOKMARKs on idle watches that ask for progress",
    )
    service.flag(
        parser,
        "compaction-interval",
        "STRATA_COMPACTION_INTERVAL",
        "5m",
        "how often to compact etcd history (0 turns compaction off)",
    )
    service.flag(
        parser,
        "metrics-listen",
        "STRATA_STORAGE_METRICS_LISTEN",
        "",
        "address serving Prometheus /metrics (empty: none)",
    )
    service.flag(
        parser,
        "storage-objects-interval",
        "STRATA_STORAGE_OBJECTS_INTERVAL",
        "1m",
        "how often apiserver_storage_objects is recounted",
    )
    args = parser.parse_args(argv)
    try:
        args.compaction_interval = service.parse_duration(args.compaction_interval)
        args.storage_objects_interval = service.parse_duration(args.storage_objects_interval)
        service.parse_duration(args.etcd_request_timeout)
    except ValueError as e:
        parser.error(str(e))
    transformers = _transformers(args.encryption_provider_config)
    args.identity = service.tls_identity(args, "strata-storage")
    telemetry.setup("strata-storage")
    service.run(_run(args, transformers))


async def _etcd_answers(etcd: Etcd) -> bool:
    """Whether etcd answers a linearizable read (kube's etcd check reads a key
    called health)."""
    await etcd.range(b"health", count_only=True)
    return True


async def _run(args: argparse.Namespace, transformers: Transformers | None) -> None:
    etcd = _etcd(args)
    counter = ObjectCounter(etcd, args.etcd_prefix, args.storage_objects_interval)
    tasks: list[asyncio.Task[None]] = []
    metrics_server: list[web.AppRunner] = []

    async def register(server: grpc.aio.Server) -> None:
        storage = EtcdStorage(
            etcd,
            prefix=args.etcd_prefix,
            progress_interval_seconds=float(args.watch_progress_interval),
            transformers=transformers,
            on_resource=counter.saw,
        )
        add_to_server(StorageServicer(storage), server)
        if args.compaction_interval > 0:
            tasks.append(asyncio.create_task(Compactor(etcd, args.compaction_interval).run()))
        if args.metrics_listen:
            metrics_server.append(await serve_metrics(args.metrics_listen, REGISTRY))
            tasks.append(asyncio.create_task(counter.run()))

    async def stop() -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for runner in metrics_server:
            await runner.cleanup()
        await etcd.close()

    await service.serve(
        service_name="strata-storage",
        listen=args.listen,
        identity=args.identity,
        callers=service.allowed_clients(args),
        register=register,
        on_stop=stop,
        readiness={
            SERVICE_NAME: service.always_ready(),
            service.ETCD_READINESS: service.polled_readiness(lambda: _etcd_answers(etcd)),
        },
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
        etcd = _etcd(args)
        try:
            report = await reencrypt(etcd, args.etcd_prefix, transformers)
        finally:
            await etcd.close()
        print(report.summary())
        for problem in report.unreadable:
            print(f"unreadable: {problem}", file=sys.stderr)
        return 1 if report.unreadable else 0

    raise SystemExit(service.run(run()))


if __name__ == "__main__":
    main()
