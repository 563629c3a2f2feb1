"""The API through the gateway: creates, gets, 100-item list pages and merge
patches of ConfigMaps per second (and their latency) at 16 concurrent clients,
next to what raw etcd does from Python for each (put, one-key range, 100-key
range, put), in one run on one machine.

    python bench/api.py [--seconds 5] [--rounds 2] [--concurrency 16]

Starts etcd and the four services as `make run` does (tracing on at the
default sampling rate, exported over OTLP to a receiver in this process),
then alternates strata and raw-etcd phases so both see the same machine at
the same moment. Ratios are strata / raw etcd (medians over rounds), latencies
p50/p99 over all of a kind's strata operations. Each phase also prints the
CPU time per operation of every process taking part (read from /proc), which
says where a request's cost goes. Results go to bench/results/api.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import (
    cpu_seconds,
    gateway_session,
    percentile,
    quick_defaults,
    running_system,
    write_result,
)
from strata.dev import System
from strata.etcd import prefix_end

# About what a small ConfigMap weighs once stored.
VALUE = orjson.dumps(
    {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x" * 20, "namespace": "bench", "uid": "u" * 36},
        "data": {"key": "v" * 200},
    }
)

Op = Callable[[int, int], Awaitable[None]]
# The phases that go through strata; the others are raw etcd.
STRATA_PHASES = frozenset({"create", "get", "list", "patch"})


async def run_phase(
    op: Op, concurrency: int, seconds: float, latencies: list[float], processes: dict[str, int]
) -> tuple[float, int, dict[str, float]]:
    """(operations per second, errors, CPU microseconds per operation of each of
    processes) for op driven by concurrency workers; each success's seconds go
    to latencies."""
    done = [0] * concurrency
    errors = [0]
    deadline = time.monotonic() + seconds

    async def worker(w: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            began = time.monotonic()
            try:
                await op(w, i)
                done[w] += 1
                latencies.append(time.monotonic() - began)
            except Exception:
                errors[0] += 1
            i += 1

    before = {name: cpu_seconds(pid) for name, pid in processes.items()}
    start = time.monotonic()
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    elapsed, count = time.monotonic() - start, max(sum(done), 1)
    cpu = {name: (cpu_seconds(pid) - before[name]) / count * 1e6 for name, pid in processes.items()}
    return sum(done) / elapsed, errors[0], cpu


async def bench(args: argparse.Namespace, system: System) -> dict[str, object]:
    assert system.endpoints is not None
    etcd = system.etcd_client()
    session = gateway_session(
        system.endpoints.gateway,
        system.ca_file,
        system.admin_token,
        connections=args.concurrency * 2,
    )
    async with session.post(
        "/api/v1/namespaces",
        json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}},
    ) as response:
        response.raise_for_status()
    created: dict[int, int] = {}
    configmaps = "/api/v1/namespaces/bench/configmaps"

    def name(w: int, i: int, r: int) -> str:
        return f"r{r}-w{w}-{i}"

    kinds = ("create", "put", "get", "range", "list", "range_page", "patch", "put_again")
    results: dict[str, list[float]] = {k: [] for k in kinds}
    latencies: dict[str, list[float]] = {k: [] for k in kinds}
    errors: dict[str, int] = dict.fromkeys(kinds, 0)
    cpu: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
    services = ("gateway", "registry", "cacher", "storage", "etcd")
    strata_processes = {s: system.process(s).pid for s in services}
    strata_processes["client"] = os.getpid()
    etcd_processes = {"client": os.getpid(), "etcd": system.process("etcd").pid}
    for r in range(args.rounds):

        def existing(w: int, i: int, r: int = r) -> str:
            return name(w, i % max(created.get(w, 1), 1), r)

        async def create(w: int, i: int, r: int = r) -> None:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name(w, i, r)},
                "data": {"key": "v" * 200},
            }
            async with session.post(configmaps, json=body) as resp:
                if resp.status != 201:
                    raise RuntimeError(resp.status)
                await resp.read()
            created[w] = max(created.get(w, 0), i + 1)

        async def get(w: int, i: int) -> None:
            async with session.get(f"{configmaps}/{existing(w, i)}") as resp:
                if resp.status != 200:
                    raise RuntimeError(resp.status)
                await resp.read()

        async def list_page(w: int, i: int) -> None:
            async with session.get(f"{configmaps}?limit=100") as resp:
                if resp.status != 200:
                    raise RuntimeError(resp.status)
                await resp.read()

        async def patch(w: int, i: int) -> None:
            body = orjson.dumps({"metadata": {"labels": {"round": str(i)}}})
            headers = {"Content-Type": "application/merge-patch+json"}
            async with session.patch(
                f"{configmaps}/{existing(w, i)}", data=body, headers=headers
            ) as resp:
                if resp.status != 200:
                    raise RuntimeError(resp.status)
                await resp.read()

        async def put(w: int, i: int, r: int = r) -> None:
            await etcd.put(f"/bench-raw/{name(w, i, r)}".encode(), VALUE)

        async def get_raw(w: int, i: int) -> None:
            await etcd.range(f"/bench-raw/{existing(w, i)}".encode())

        async def page_raw(w: int, i: int) -> None:
            start = b"/bench-raw/"
            await etcd.range(start, prefix_end(start), limit=100)

        created.clear()
        phases: tuple[tuple[str, Op], ...] = (
            ("create", create),
            ("put", put),
            ("get", get),
            ("range", get_raw),
            ("list", list_page),
            ("range_page", page_raw),
            ("patch", patch),
            ("put_again", put),
        )
        for label, op in phases:
            processes = strata_processes if label in STRATA_PHASES else etcd_processes
            rate, failed, used = await run_phase(
                op, args.concurrency, args.seconds, latencies[label], processes
            )
            results[label].append(rate)
            errors[label] += failed
            cpu[label].append(used)
            spent = " + ".join(f"{p} {us:.0f}" for p, us in used.items())
            print(
                f"round {r + 1} {label:>10}: {rate:8.0f}/s  ({failed} errors)  "
                f"cpu us/op [{spent} = {sum(used.values()):.0f}]",
                flush=True,
            )
    await session.close()
    await etcd.close()
    medians = {k: statistics.median(v) for k, v in results.items()}
    return {
        "concurrency": args.concurrency,
        "seconds_per_phase": args.seconds,
        "rounds": args.rounds,
        "per_second": {k: round(v, 1) for k, v in medians.items()},
        "rounds_per_second": {k: [round(x, 1) for x in v] for k, v in results.items()},
        "latency_ms": {
            k: {
                "p50": round(percentile(v, 50) * 1000, 2),
                "p99": round(percentile(v, 99) * 1000, 2),
            }
            for k, v in latencies.items()
            if v
        },
        "errors": errors,
        # Each process's CPU time per operation, the median over rounds: on a
        # machine whose cores are all busy, throughput is the cores over the sum.
        "cpu_us_per_op": {
            k: {p: round(statistics.median(r[p] for r in v), 1) for p in v[0]}
            for k, v in cpu.items()
            if v
        },
        "ratio": {
            "create_vs_etcd_put": round(medians["create"] / medians["put"], 3),
            "get_vs_etcd_range": round(medians["get"] / medians["range"], 3),
            "list_vs_etcd_range_100": round(medians["list"] / medians["range_page"], 3),
            "patch_vs_etcd_put": round(medians["patch"] / medians["put_again"], 3),
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16)
    quick_defaults(parser, seconds=0.3, rounds=1, concurrency=4)
    args = parser.parse_args()
    with running_system() as system:
        result = asyncio.run(bench(args, system))
    path = write_result("api", result)
    rates, ratio = result["per_second"], result["ratio"]
    print(json.dumps({"per_second": rates, "ratio": ratio}, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
