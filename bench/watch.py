"""Watch fan-out through the gateway: N concurrent watchers on one namespace,
E events, delivery latency from the moment each event's create was sent to
the moment each watcher read it (and per event, when its first and its last
watcher read it: the system's propagation, then the fan-out).

    python bench/watch.py [--watchers 200,1000] [--events 50] [--interval 0.1]
                          [--clients 2] [--client-loop uvloop|asyncio]
                          [--reader protocol|aiohttp] [--repeat 3] [--floor]

Starts the whole system as `make run` does (tracing on at the default
sampling rate). The watchers are plain HTTPS watch requests
(`?watch=1&resourceVersion=<list RV>`), spread over --clients processes so
reading them is not bound to one core; one writer in this process creates a
ConfigMap every --interval seconds. No watcher closes its connection before
every watcher has read every event (closing costs a client process time that
would show as the last event's latency). Every watcher must receive every event
exactly once; the report gives p50/p90/p99/max latency over all deliveries,
each event's first and last delivery, and the CPU seconds each service and
client process spent during the events, and goes to
bench/results/watch-<loop>-protocol-clients.json (watch-uvloop-clients.json
with aiohttp readers on uvloop, watch.json with aiohttp readers on asyncio).
--repeat runs each watcher count that many times and gives each round's p99
and their median: one noisy moment of this shared machine moves a single
round's p99 by tens of milliseconds.

The clients share the machine's two cores with the system, so what reading
costs them shows in the latency. By default each watcher is a bare asyncio
protocol on uvloop whose chunked response httptools decodes in data_received,
about 30 us of CPU per delivery; --reader aiohttp wakes a task per line
(about 42 us on uvloop, 56 with --client-loop asyncio, which is what earlier
results up to bench/results/watch.json used).

--floor drives the floor server (bench/_floor.py: one aiohttp process that
writes each create to etcd and each etcd event to every watcher, nothing else)
the same way, to bench/results/watch-floor*.json: what any Python server with
these clients reaches on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import statistics
import sys
import time
from dataclasses import dataclass
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._floor import running_floor
from bench._harness import (
    cpu_seconds,
    gateway_session,
    percentile,
    quick_defaults,
    running_system,
    write_result,
)
from bench._watch_clients import Share, run_client
from strata.dev import System

SERVICES = ("gateway", "registry", "cacher", "storage", "etcd")


@dataclass(frozen=True)
class Target:
    """What the watchers and the writer talk to, and the processes whose CPU
    time the report gives."""

    url: str
    ca_file: Path
    token: str
    processes: dict[str, int]

    def session(self) -> aiohttp.ClientSession:
        return gateway_session(self.url, self.ca_file, self.token)


def strata_target(system: System) -> Target:
    assert system.endpoints is not None
    pids = {name: system.process(name).pid for name in SERVICES}
    return Target(system.endpoints.gateway, system.ca_file, system.admin_token, pids)


async def _write_events(
    target: Target, namespace: str, events: int, interval: float
) -> list[float]:
    session = target.session()
    sent = []
    try:
        for i in range(events):
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"ev-{i:05d}"},
                "data": {"key": "v" * 200},
            }
            began = time.monotonic()
            sent.append(began)
            async with session.post(
                f"/api/v1/namespaces/{namespace}/configmaps", json=body
            ) as response:
                if response.status != 201:
                    raise RuntimeError(f"create answered {response.status}")
            await asyncio.sleep(max(0.0, began + interval - time.monotonic()))
    finally:
        await session.close()
    return sent


async def prepare(target: Target, namespace: str) -> str:
    """A fresh namespace, and the resourceVersion the watchers start from."""
    async with target.session() as session:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        async with session.post("/api/v1/namespaces", json=body) as response:
            if response.status != 201:
                raise RuntimeError(f"namespace create answered {response.status}")
        async with session.get(f"/api/v1/namespaces/{namespace}/configmaps") as response:
            listed = await response.json()
    return str(listed["metadata"]["resourceVersion"])


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 1) if values else None


def run_round(
    target: Target,
    namespace: str,
    resource_version: str,
    watchers: int,
    events: int,
    interval: float,
    clients: int,
    client_loop: str,
    reader: str,
) -> dict[str, Any]:
    """watchers watching namespace's ConfigMaps from resource_version while
    events ConfigMaps are created in it, one every interval seconds."""
    path = f"/api/v1/namespaces/{namespace}/configmaps?watch=1&resourceVersion={resource_version}"
    context = multiprocessing.get_context("spawn")
    queue: Queue[Any] = context.Queue()
    shares = [watchers // clients + (1 if c < watchers % clients else 0) for c in range(clients)]
    shares = [share for share in shares if share]
    everyone = context.Barrier(len(shares))
    processes = [
        context.Process(
            target=run_client,
            args=(
                client_loop,
                Share(target.url, str(target.ca_file), target.token, path, share, events, reader),
                queue,
                everyone,
            ),
        )
        for share in shares
    ]
    opened_at = time.monotonic()
    for process in processes:
        process.start()
    for _ in processes:
        message = queue.get(timeout=300)
        assert message[0] == "ready", message
    opened_in = time.monotonic() - opened_at
    pids = dict(target.processes)
    for c, process in enumerate(processes):
        assert process.pid is not None  # started above
        pids[f"client{c}"] = process.pid
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    sent = asyncio.run(_write_events(target, namespace, events, interval))
    cpu_after = {name: cpu_seconds(pid) for name, pid in pids.items()}
    latencies: list[float] = []
    # Per event, its first and last delivery: how long the system took to
    # bring it to the gateway's fan-out, and how long the fan-out took.
    first = [float("inf")] * events
    last = [0.0] * events
    missing = duplicates = 0
    failures: list[str] = []
    for _ in processes:
        _, received, dup, failed = queue.get(timeout=120 + events)
        duplicates += dup
        failures += failed
        for times in received:
            for i, at in enumerate(times):
                if at:
                    latency = (at - sent[i]) * 1000
                    latencies.append(latency)
                    first[i], last[i] = min(first[i], latency), max(last[i], latency)
                else:
                    missing += 1
    for process in processes:
        process.join(30)
    ms = (lambda p: round(percentile(latencies, p), 1)) if latencies else (lambda p: None)
    return {
        "watchers": watchers,
        "events": events,
        "deliveries": len(latencies),
        "missing": missing,
        "duplicates": duplicates,
        "client_failures": failures,
        "watchers_opened_in_s": round(opened_in, 2),
        "latency_ms": {"p50": ms(50), "p90": ms(90), "p99": ms(99), "max": ms(100)},
        "per_event_ms": {
            "first_delivery_p50": _median([f for f in first if f != float("inf")]),
            "last_delivery_p50": _median([t for t in last if t]),
            # Each event's, in order (None: no watcher read it).
            "first": [round(f, 1) if f != float("inf") else None for f in first],
            "last": [round(t, 1) if t else None for t in last],
        },
        "cpu_seconds_during_events": {
            name: round(cpu_after[name] - cpu_before[name], 2) for name in pids
        },
    }


def _summary(rounds: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per watcher count, each repeat's p50 and p99 and their medians."""
    by_watchers: dict[str, list[dict[str, Any]]] = {}
    for r in rounds:
        by_watchers.setdefault(str(r["watchers"]), []).append(r["latency_ms"])
    return {
        watchers: {
            "p50_ms": [m["p50"] for m in measured],
            "p99_ms": [m["p99"] for m in measured],
            "p50_median_ms": _median([m["p50"] for m in measured if m["p50"] is not None]),
            "p99_median_ms": _median([m["p99"] for m in measured if m["p99"] is not None]),
        }
        for watchers, measured in by_watchers.items()
    }


def _results_name(floor: bool, client_loop: str, reader: str) -> str:
    """watch[-floor], then what the clients ran unless asyncio and aiohttp."""
    name = "watch-floor" if floor else "watch"
    if reader != "aiohttp":
        return f"{name}-{client_loop}-{reader}-clients"
    return name if client_loop == "asyncio" else f"{name}-{client_loop}-clients"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--watchers", default="200,1000")
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--client-loop", choices=("uvloop", "asyncio"), default="uvloop")
    parser.add_argument(
        "--reader",
        choices=("protocol", "aiohttp"),
        default="protocol",
        help="how each watcher reads: aiohttp's readline, or a bare protocol (httptools)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="watch the floor server (bench/_floor.py) instead of strata",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="rounds per watcher count (this machine's other tenants come and go: the "
        "summary gives each round's p99 and their median)",
    )
    quick_defaults(parser, watchers="20", events=5, interval=0.05, clients=1, repeat=1)
    args = parser.parse_args()
    rounds: list[dict[str, Any]] = []
    with contextlib.ExitStack() as running:
        if args.floor:
            server = running.enter_context(running_floor())
            target = Target(server.url, server.ca_file, "floor", server.processes)
        else:
            target = strata_target(running.enter_context(running_system()))
        for r, watchers in enumerate(int(w) for w in args.watchers.split(",")):
            for repeat in range(args.repeat):
                namespace = f"bench-watch-{r}-{repeat}"
                # The floor has no namespaces, nor a list to start a watch from.
                start = "0" if args.floor else asyncio.run(prepare(target, namespace))
                result = run_round(
                    target,
                    namespace,
                    start,
                    watchers,
                    args.events,
                    args.interval,
                    args.clients,
                    args.client_loop,
                    args.reader,
                )
                rounds.append({"repeat": repeat, **result})
                per_event = result["per_event_ms"]
                print(
                    f"{watchers:5d} watchers: {result['deliveries']} delivered, "
                    f"{result['missing']} missing, {result['duplicates']} duplicated; "
                    f"latency ms {result['latency_ms']}; per event first/last p50 "
                    f"{per_event['first_delivery_p50']}/{per_event['last_delivery_p50']}; "
                    f"cpu s {result['cpu_seconds_during_events']}",
                    flush=True,
                )
    summary = _summary(rounds)
    for count, line in summary.items():
        print(f"{count:>5} watchers over {args.repeat} repeats: {line}")
    path = write_result(
        _results_name(args.floor, args.client_loop, args.reader),
        {
            "interval_s": args.interval,
            "clients": args.clients,
            "client_loop": args.client_loop,
            "reader": args.reader,
            "repeats": args.repeat,
            "summary": summary,
            "rounds": rounds,
        },
    )
    print(f"wrote {path}")
    ok = all(r["missing"] == 0 and r["duplicates"] == 0 for r in rounds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
