"""Watch fan-out through the gateway: N concurrent watchers on one namespace,
E events, delivery latency from the moment each event's create was sent to
the moment each watcher read it (and per event, when its first and its last
watcher read it: the system's propagation, then the fan-out).

    python bench/watch.py [--watchers 200,1000] [--events 50] [--interval 0.1]
                          [--clients 2] [--client-loop asyncio|uvloop] [--floor]

Starts the whole system as `make run` does (tracing on at the default
sampling rate). The watchers are plain HTTPS watch requests
(`?watch=1&resourceVersion=<list RV>`), spread over --clients processes so
reading them is not bound to one core; one writer in this process creates a
ConfigMap every --interval seconds. No watcher closes its connection before
every watcher has read every event (closing costs a client process time that
would show as the last event's latency). Every watcher must receive every event
exactly once; the report gives p50/p90/p99/max latency over all deliveries
and the CPU seconds each service and client process spent during the events,
and goes to bench/results/watch.json (watch-uvloop-clients.json with uvloop
clients). The clients share the machine's cores with the system, so what
reading costs them shows in the latency: --client-loop uvloop makes them
cheaper (the default stays asyncio, so results compare with earlier runs).

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
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import aiohttp
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._floor import running_floor
from bench._harness import (
    cpu_seconds,
    gateway_session,
    percentile,
    running_system,
    write_result,
)
from strata.dev import System

NAME_MARK = b'"name":"ev-'
SERVICES = ("gateway", "registry", "cacher", "storage", "etcd")


def _event_index(line: bytes) -> int | None:
    at = line.find(NAME_MARK)
    if at < 0:
        return None
    start = at + len(NAME_MARK)
    return int(line[start : line.index(b'"', start)])


@dataclass(frozen=True)
class _Share:
    """One client process's watchers: count watches of path, each until it has
    read events events."""

    url: str
    ca_file: str
    token: str
    path: str
    count: int
    events: int


async def _watchers(share: _Share, queue: Queue[Any], everyone: Barrier) -> None:
    count, events = share.count, share.events
    session = gateway_session(share.url, Path(share.ca_file), share.token)
    received: list[list[float]] = [[0.0] * events for _ in range(count)]
    duplicates = [0]
    opened = [0]
    all_open = asyncio.Event()
    # TLS handshakes for a thousand connections at once would time some out.
    handshakes = asyncio.Semaphore(32)
    # Closing a connection costs its process time that would show as the last
    # event's latency at the watchers still reading it, in this process and
    # the others: no watcher closes until every watcher of every client
    # process is through (or has failed).
    reading = [count]
    all_read = asyncio.Event()
    release = asyncio.Event()

    def through() -> None:
        reading[0] -= 1
        if not reading[0]:
            all_read.set()

    async def release_together() -> None:
        await all_read.wait()
        with contextlib.suppress(threading.BrokenBarrierError):
            await asyncio.to_thread(everyone.wait, 60 + events)
        release.set()

    async def watch(w: int) -> None:
        times = received[w]
        counted = False
        try:
            async with handshakes:
                response = await session.get(share.path)
            async with response:
                response.raise_for_status()
                opened[0] += 1
                if opened[0] == count:
                    all_open.set()
                seen = 0
                while seen < events:
                    line = await response.content.readline()
                    if not line:
                        return
                    now = time.monotonic()
                    index = _event_index(line)
                    if index is None or index >= events:
                        continue
                    if times[index]:
                        duplicates[0] += 1
                    else:
                        times[index] = now
                        seen += 1
                counted = True
                through()
                await release.wait()
        finally:
            if not counted:
                through()

    releasing = asyncio.create_task(release_together())
    tasks = [asyncio.create_task(watch(w)) for w in range(count)]
    opening = asyncio.ensure_future(all_open.wait())
    await asyncio.wait([opening, *tasks], return_when=asyncio.FIRST_COMPLETED)
    queue.put(("ready", os.getpid()))
    done, pending = await asyncio.wait(tasks, timeout=60 + events)
    for task in pending:
        task.cancel()
    failures = [repr(t.exception()) for t in done if t.exception() is not None]
    if not release.is_set():
        everyone.abort()  # no one waits for a process that gave up
    releasing.cancel()
    await session.close()
    queue.put(("done", received, duplicates[0], failures[:5]))


def _client(loop: str, share: _Share, queue: Queue[Any], everyone: Barrier) -> None:
    run = uvloop.run if loop == "uvloop" else asyncio.run
    run(_watchers(share, queue, everyone))


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
    client_loop: str = "asyncio",
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
            target=_client,
            args=(
                client_loop,
                _Share(target.url, str(target.ca_file), target.token, path, share, events),
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
        },
        "cpu_seconds_during_events": {
            name: round(cpu_after[name] - cpu_before[name], 2) for name in pids
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--watchers", default="200,1000")
    parser.add_argument("--events", type=int, default=50)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--client-loop", choices=("asyncio", "uvloop"), default="asyncio")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="watch the floor server (bench/_floor.py) instead of strata",
    )
    args = parser.parse_args()
    rounds = []
    with contextlib.ExitStack() as running:
        if args.floor:
            server = running.enter_context(running_floor())
            target = Target(server.url, server.ca_file, "floor", server.processes)
        else:
            target = strata_target(running.enter_context(running_system()))
        for r, watchers in enumerate(int(w) for w in args.watchers.split(",")):
            namespace = f"bench-watch-{r}"
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
            )
            rounds.append(result)
            print(
                f"{watchers:5d} watchers: {result['deliveries']} delivered, "
                f"{result['missing']} missing, {result['duplicates']} duplicated; "
                f"latency ms {result['latency_ms']}; per event {result['per_event_ms']}; "
                f"cpu s {result['cpu_seconds_during_events']}",
                flush=True,
            )
    name = "watch-floor" if args.floor else "watch"
    path = write_result(
        name if args.client_loop == "asyncio" else f"{name}-{args.client_loop}-clients",
        {
            "interval_s": args.interval,
            "clients": args.clients,
            "client_loop": args.client_loop,
            "rounds": rounds,
        },
    )
    print(f"wrote {path}")
    ok = all(r["missing"] == 0 and r["duplicates"] == 0 for r in rounds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
