"""Listing many objects through the gateway, from the watch cache (RV=0) and
consistent (RV=""), next to one raw etcd range of the same keys.

    python bench/list.py [--objects 10000] [--size 1024] [--rounds 10]

Starts the whole system as `make run` does (tracing on at the default
sampling rate), creates --objects ConfigMaps of about --size bytes each in one
namespace, then alternates, --rounds times: GET the namespace's configmaps
with resourceVersion=0, with no resourceVersion, and a raw etcd Range of the
same prefix from Python. A request's time is until its whole body has been
read. It also reports the cacher's resident memory per cached object (RSS
growth while the objects were created, divided by their number: each object
also sits once in the event window). Results go to bench/results/list.json.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import gateway_session, percentile, quick_defaults, running_system, write_result
from strata.dev import System
from strata.etcd import Etcd, prefix_end

NAMESPACE = "bench-list"


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


async def _create_all(session: aiohttp.ClientSession, objects: int, size: int) -> None:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace"}
    body["metadata"] = {"name": NAMESPACE}
    async with session.post("/api/v1/namespaces", json=body) as response:
        if response.status != 201:
            raise RuntimeError(f"namespace create answered {response.status}")
    names = iter(range(objects))
    filler = "v" * max(0, size - 200)

    async def worker() -> None:
        for i in names:
            cm = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"cm-{i:06d}", "labels": {"bench": "list"}},
                "data": {"key": filler},
            }
            async with session.post(f"/api/v1/namespaces/{NAMESPACE}/configmaps", json=cm) as r:
                if r.status != 201:
                    raise RuntimeError(f"create answered {r.status}: {await r.text()}")

    await asyncio.gather(*(worker() for _ in range(32)))


async def _timed_list(session: aiohttp.ClientSession, query: str, objects: int) -> float:
    began = time.perf_counter()
    async with session.get(f"/api/v1/namespaces/{NAMESPACE}/configmaps{query}") as response:
        body = await response.read()
    elapsed = (time.perf_counter() - began) * 1000
    if response.status != 200:
        raise RuntimeError(f"list answered {response.status}: {body[:200]!r}")
    # Count items without decoding them all: every ConfigMap has one uid.
    if body.count(b'"uid":') != objects:
        raise RuntimeError("the list did not return every object")
    return elapsed


async def _timed_range(etcd: Etcd, objects: int) -> float:
    prefix = f"/registry/configmaps/{NAMESPACE}/".encode()
    began = time.perf_counter()
    response = await etcd.range(prefix, prefix_end(prefix))
    elapsed = (time.perf_counter() - began) * 1000
    if len(response.kvs) != objects:
        raise RuntimeError(f"etcd returned {len(response.kvs)} keys")
    return elapsed


async def bench(system: System, args: argparse.Namespace) -> dict[str, Any]:
    assert system.endpoints is not None
    cacher = system.process("cacher").pid
    session = gateway_session(
        system.endpoints.gateway, system.ca_file, system.admin_token, connections=64
    )
    etcd = system.etcd_client()
    try:
        # Start the cache first, so its baseline holds everything but the objects.
        await _timed_list(session, "?resourceVersion=0&limit=1", 0)
        rss_before = _rss_bytes(cacher)
        began = time.perf_counter()
        await _create_all(session, args.objects, args.size)
        created_in = time.perf_counter() - began
        await _timed_list(session, "", args.objects)  # the cache has every object
        rss_after = _rss_bytes(cacher)
        times: dict[str, list[float]] = {"rv0": [], "consistent": [], "etcd_range": []}
        for r in range(args.rounds):
            times["rv0"].append(await _timed_list(session, "?resourceVersion=0", args.objects))
            times["consistent"].append(await _timed_list(session, "", args.objects))
            times["etcd_range"].append(await _timed_range(etcd, args.objects))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.0f} ms" for k, v in times.items()))
    finally:
        await session.close()
        await etcd.close()
    summary = {
        name: {
            "median": round(statistics.median(values), 1),
            "p90": round(percentile(values, 90), 1),
            "min": round(min(values), 1),
        }
        for name, values in times.items()
    }
    return {
        "objects": args.objects,
        "object_bytes": args.size,
        "rounds": args.rounds,
        "created_per_second": round(args.objects / created_in, 1),
        "list_ms": summary,
        "ratio_to_etcd_range": {
            name: round(summary[name]["median"] / summary["etcd_range"]["median"], 2)
            for name in ("rv0", "consistent")
        },
        "cacher_rss_bytes_per_object": round((rss_after - rss_before) / args.objects),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=10000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=10)
    quick_defaults(parser, objects=100, rounds=2)
    args = parser.parse_args()
    with running_system() as system:
        result = asyncio.run(bench(system, args))
    path = write_result("list", result)
    print(
        f"list of {args.objects}: {result['list_ms']}; cacher RSS per object "
        f"{result['cacher_rss_bytes_per_object']} B; wrote {path}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
