"""Watch fan-out through the gateway: N concurrent watchers on one namespace,
E events, delivery latency from the moment each event's create was sent to
the moment each watcher read it (and per event, when its first and its last
watcher read it: the system's propagation, then the fan-out).

    python bench/watch.py [--watchers 200,1000] [--events 50] [--interval 0.1]
                          [--clients 2] [--client-loop asyncio|uvloop]

Starts the whole system as `make run` does (tracing on at the default
sampling rate). The watchers are plain HTTPS watch requests
(`?watch=1&resourceVersion=<list RV>`), spread over --clients processes so
reading them is not bound to one core; one writer in this process creates a
ConfigMap every --interval seconds. Every watcher must receive every event
exactly once; the report gives p50/p90/p99/max latency over all deliveries
and the CPU seconds each service and client process spent during the events,
and goes to bench/results/watch.json (watch-uvloop-clients.json with uvloop
clients). The clients share the machine's cores with the system, so what
reading costs them shows in the latency: --client-loop uvloop makes them
cheaper (the default stays asyncio, so results compare with earlier runs).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import time
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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


async def _watchers(
    url: str, ca_file: str, token: str, path: str, count: int, events: int, queue: Queue[Any]
) -> None:
    session = gateway_session(url, Path(ca_file), token)
    received: list[list[float]] = [[0.0] * events for _ in range(count)]
    duplicates = [0]
    opened = [0]
    all_open = asyncio.Event()
    # TLS handshakes for a thousand connections at once would time some out.
    handshakes = asyncio.Semaphore(32)

    async def watch(w: int) -> None:
        times = received[w]
        async with handshakes:
            response = await session.get(path)
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

    tasks = [asyncio.create_task(watch(w)) for w in range(count)]
    opening = asyncio.ensure_future(all_open.wait())
    await asyncio.wait([opening, *tasks], return_when=asyncio.FIRST_COMPLETED)
    queue.put(("ready", os.getpid()))
    done, pending = await asyncio.wait(tasks, timeout=60 + events)
    for task in pending:
        task.cancel()
    failures = [repr(t.exception()) for t in done if t.exception() is not None]
    await session.close()
    queue.put(("done", received, duplicates[0], failures[:5]))


def _client(
    loop: str,
    url: str,
    ca_file: str,
    token: str,
    path: str,
    count: int,
    events: int,
    queue: Queue[Any],
) -> None:
    run = uvloop.run if loop == "uvloop" else asyncio.run
    run(_watchers(url, ca_file, token, path, count, events, queue))


async def _write_events(
    system: System, namespace: str, events: int, interval: float
) -> list[float]:
    assert system.endpoints is not None
    session = gateway_session(system.endpoints.gateway, system.ca_file, system.admin_token)
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


async def _prepare(system: System, namespace: str) -> str:
    """A fresh namespace, and the resourceVersion the watchers start from."""
    assert system.endpoints is not None
    async with gateway_session(
        system.endpoints.gateway, system.ca_file, system.admin_token
    ) as session:
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
    system: System,
    namespace: str,
    watchers: int,
    events: int,
    interval: float,
    clients: int,
    client_loop: str = "asyncio",
) -> dict[str, Any]:
    assert system.endpoints is not None
    rv = asyncio.run(_prepare(system, namespace))
    path = f"/api/v1/namespaces/{namespace}/configmaps?watch=1&resourceVersion={rv}"
    context = multiprocessing.get_context("spawn")
    queue: Queue[Any] = context.Queue()
    shares = [watchers // clients + (1 if c < watchers % clients else 0) for c in range(clients)]
    processes = [
        context.Process(
            target=_client,
            args=(
                client_loop,
                system.endpoints.gateway,
                str(system.ca_file),
                system.admin_token,
                path,
                share,
                events,
                queue,
            ),
        )
        for share in shares
        if share
    ]
    opened_at = time.monotonic()
    for process in processes:
        process.start()
    for _ in processes:
        message = queue.get(timeout=300)
        assert message[0] == "ready", message
    opened_in = time.monotonic() - opened_at
    pids = {name: system.process(name).pid for name in SERVICES}
    for c, process in enumerate(processes):
        assert process.pid is not None  # started above
        pids[f"client{c}"] = process.pid
    cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    sent = asyncio.run(_write_events(system, namespace, events, interval))
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
    args = parser.parse_args()
    rounds = []
    with running_system() as system:
        for r, watchers in enumerate(int(w) for w in args.watchers.split(",")):
            result = run_round(
                system,
                f"bench-watch-{r}",
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
    path = write_result(
        "watch" if args.client_loop == "asyncio" else f"watch-{args.client_loop}-clients",
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
