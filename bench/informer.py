"""An informer's cost next to what Python users have had: time and peak memory
to sync 10,000 ConfigMaps and then to process 10,000 updates, for a strata.client
SharedIndexInformer and for a list-then-watch loop written with the official
`kubernetes` client, in one run against the same strata.

    python bench/informer.py [--objects 10000]

Each client runs in a process of its own (its peak RSS is its own), started
once the objects exist: it syncs, says so, then counts the update events it
receives while this process rewrites every object once (straight into etcd, so
the writer is not what is measured). Results go to bench/results/informer.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import quick_defaults, running_system, write_result
from strata.dev import System
from strata.etcd import Etcd

NAMESPACE = "bench-informer"


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _report(**values: object) -> None:
    print(json.dumps(values), flush=True)


async def _strata_client(kubeconfig: str, objects: int) -> None:
    from strata.client import (
        DynamicClient,
        EventHandler,
        Resource,
        RestClient,
        SharedIndexInformer,
        load_config,
    )

    updates = 0
    done = asyncio.Event()

    def updated(old: object, new: object) -> None:
        nonlocal updates
        updates += 1
        if updates == objects:
            done.set()

    async with RestClient(load_config(kubeconfig)) as rest:
        cms = DynamicClient(rest).resource(Resource(version="v1", resource="configmaps"))
        informer = SharedIndexInformer(cms, namespace=NAMESPACE)
        informer.add_event_handler(EventHandler(on_update=updated))
        started = time.monotonic()
        informer.start()
        await informer.wait_for_cache_sync()
        _report(phase="synced", seconds=time.monotonic() - started, cached=len(informer.indexer))
        await asyncio.to_thread(sys.stdin.readline)  # the writer begins
        started = time.monotonic()
        await done.wait()
        _report(phase="updated", seconds=time.monotonic() - started, peak_mib=_peak_mib())
        await informer.stop()


def _kubernetes_client(kubeconfig: str, objects: int) -> None:
    """The loop people write with the official client: list in pages into a
    dict, then watch from the list's resourceVersion."""
    from kubernetes import client, config, watch

    # The official client's models are loosely typed (every field Optional).
    api: Any = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))  # type: ignore[no-untyped-call]
    started = time.monotonic()
    cache: dict[str, Any] = {}
    token, version = None, ""
    while True:
        page = api.list_namespaced_config_map(NAMESPACE, limit=500, _continue=token)
        for item in page.items:
            cache[item.metadata.name] = item
        version = version or page.metadata.resource_version
        token = page.metadata._continue
        if not token:
            break
    _report(phase="synced", seconds=time.monotonic() - started, cached=len(cache))
    sys.stdin.readline()
    started = time.monotonic()
    updates = 0
    w: Any = watch.Watch()  # type: ignore[no-untyped-call]
    for event in w.stream(
        api.list_namespaced_config_map, NAMESPACE, resource_version=version, timeout_seconds=600
    ):
        obj = event["object"]
        cache[obj.metadata.name] = obj
        if event["type"] == "MODIFIED":
            updates += 1
            if updates == objects:
                w.stop()
    _report(phase="updated", seconds=time.monotonic() - started, peak_mib=_peak_mib())


async def _seed(etcd: Etcd, objects: int, version: str) -> None:
    prefix = f"/registry/configmaps/{NAMESPACE}/".encode()
    semaphore = asyncio.Semaphore(32)

    async def put(i: int) -> None:
        obj = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": f"cm-{i:05d}",
                "namespace": NAMESPACE,
                "uid": str(uuid.UUID(int=i)),
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"app": "bench"},
            },
            "data": {"key": "v" * 900, "version": version},
        }
        async with semaphore:
            await etcd.put(prefix + f"cm-{i:05d}".encode(), orjson.dumps(obj))

    await asyncio.gather(*(put(i) for i in range(objects)))


def _measure(kind: str, system: System, objects: int, round_: int) -> dict[str, float]:
    child = subprocess.Popen(
        [sys.executable, __file__, "--client", kind, "--kubeconfig", str(system.kubeconfig),
         "--objects", str(objects)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        synced = json.loads(child.stdout.readline())
        child.stdin.write("go\n")
        child.stdin.flush()

        async def write() -> None:
            etcd = system.etcd_client()
            try:
                await _seed(etcd, objects, f"round-{round_}")
            finally:
                await etcd.close()

        asyncio.run(write())
        updated = json.loads(child.stdout.readline())
        child.wait(60)
    finally:
        if child.poll() is None:
            child.kill()
    result = {
        "sync_seconds": round(synced["seconds"], 2),
        "update_seconds": round(updated["seconds"], 2),
        "peak_rss_mib": round(updated["peak_mib"], 1),
    }
    print(f"{kind:>10}: {result}", flush=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--client", choices=("strata", "kubernetes"))
    parser.add_argument("--kubeconfig")
    quick_defaults(parser, objects=100)
    args = parser.parse_args()
    if args.client == "strata":
        asyncio.run(_strata_client(args.kubeconfig, args.objects))
        return 0
    if args.client == "kubernetes":
        _kubernetes_client(args.kubeconfig, args.objects)
        return 0
    with running_system() as system:

        async def setup() -> None:
            etcd = system.etcd_client()
            try:
                namespace = {"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": NAMESPACE, "uid": str(uuid.uuid4())}}  # fmt: skip
                await etcd.put(
                    f"/registry/namespaces/{NAMESPACE}".encode(), orjson.dumps(namespace)
                )
                await _seed(etcd, args.objects, "seed")
            finally:
                await etcd.close()

        asyncio.run(setup())
        results = {
            kind: _measure(kind, system, args.objects, i)
            for i, kind in enumerate(("strata", "kubernetes"))
        }
    path = write_result(
        "informer",
        {"objects": args.objects, "clients": results},
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
