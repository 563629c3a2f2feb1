"""The floor under bench/api.py's creates: the least any Python API server can
cost per create on this machine, next to raw etcd puts in the same run.

    python bench/api_floor.py [--seconds 4] [--rounds 6] [--concurrency 16]

Starts etcd and the floor server (bench/_floor.py: the gateway's stack with
nothing in it but one etcd Txn per create and one etcd watch; whatever a real
API server does on top costs more).

It is driven exactly as bench/api.py drives the gateway's creates (the same
aiohttp client over TLS with a bearer token, 16 workers, the same body),
alternated with raw etcd puts from the same client so that both see the same
machine at the same moment. The ratio a real API server can reach on this
machine is below the floor's. Results go to bench/results/api-floor.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._floor import ROUTE, Floor, running_floor
from bench._harness import gateway_session, percentile, quick_defaults, write_result
from bench.api import VALUE, run_phase
from strata.etcd import Etcd


async def bench(args: argparse.Namespace, server: Floor) -> dict[str, Any]:
    etcd = Etcd(server.etcd_address)
    session = gateway_session(server.url, server.ca_file, "floor", connections=args.concurrency * 2)
    configmaps = ROUTE.format(namespace="bench")
    pids = server.processes
    rates: dict[str, list[float]] = {"create": [], "put": []}
    cpu: dict[str, list[dict[str, float]]] = {"create": [], "put": []}
    latencies: list[float] = []
    floor = {"client": os.getpid(), "floor": pids["floor"], "etcd": pids["etcd"]}
    raw = {"client": os.getpid(), "etcd": pids["etcd"]}

    async def create(w: int, i: int, r: int) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"r{r}-w{w}-{i}"},
            "data": {"key": "v" * 200},
        }
        async with session.post(configmaps, json=body) as resp:
            if resp.status != 201:
                raise RuntimeError(resp.status)
            await resp.read()

    async def put(w: int, i: int, r: int) -> None:
        await etcd.put(f"/bench-raw/r{r}-w{w}-{i}".encode(), VALUE)

    try:
        # A second of creates first: the client's TLS connections open in it.
        await run_phase(partial(create, r=-1), args.concurrency, 1.0, [], {})
        for r in range(args.rounds):
            phases = (
                ("create", partial(create, r=r), floor),
                ("put", partial(put, r=r), raw),
            )
            for label, op, processes in phases:
                rate, failed, used = await run_phase(
                    op,
                    args.concurrency,
                    args.seconds,
                    latencies if label == "create" else [],
                    processes,
                )
                if failed:
                    raise RuntimeError(f"{failed} {label}s failed")
                rates[label].append(rate)
                cpu[label].append(used)
                spent = " + ".join(f"{p} {us:.0f}" for p, us in used.items())
                print(
                    f"round {r + 1} {label:>6}: {rate:7.0f}/s  "
                    f"cpu us/op [{spent} = {sum(used.values()):.0f}]",
                    flush=True,
                )
    finally:
        await session.close()
        await etcd.close()
    ratios = [c / p for c, p in zip(rates["create"], rates["put"], strict=True)]
    return {
        "concurrency": args.concurrency,
        "seconds_per_phase": args.seconds,
        "rounds": args.rounds,
        "per_second": {k: round(statistics.median(v), 1) for k, v in rates.items()},
        "create_vs_etcd_put": round(statistics.median(ratios), 3),
        "round_ratios": sorted(round(x, 3) for x in ratios),
        "create_latency_ms": {
            "p50": round(percentile(latencies, 50) * 1000, 2),
            "p99": round(percentile(latencies, 99) * 1000, 2),
        },
        "cpu_us_per_op": {
            k: {p: round(statistics.median(r[p] for r in v), 1) for p in v[0]}
            for k, v in cpu.items()
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=16)
    quick_defaults(parser, seconds=0.3, rounds=1, concurrency=4)
    args = parser.parse_args()
    with running_floor() as server:
        result = asyncio.run(bench(args, server))
    print(
        f"floor creates {result['per_second']['create']}/s, raw etcd puts "
        f"{result['per_second']['put']}/s: ratio {result['create_vs_etcd_put']} "
        f"(rounds {result['round_ratios']})"
    )
    print(f"wrote {write_result('api-floor', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
