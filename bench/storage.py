"""Storage service throughput next to raw etcd, in one run on one machine.

    python bench/storage.py [--seconds 3] [--rounds 5] [--concurrency 1,16,64] [--page-items 1000]
                            [--floor]

Starts etcd and the storage service (tracing on at the default sampling rate,
exported over OTLP to a receiver in this process), then for each concurrency
measures, alternating strata and raw etcd in short rounds so both see the same
machine at the same moment (this machine's other tenants come and go within
seconds; the median of the rounds' ratios is what the run reports):
  put   strata: Storage.Create of a new ~1 KiB object   etcd: Put of the same bytes
  get   strata: Storage.Get (linearizable)              etcd: Range of one key
  page  strata: Storage.List with limit 1000            etcd: Range with limit 1000
The client side of both is Python (grpc.aio) in this process. Results go to
bench/results/storage.json; the ratio is strata / raw etcd.

Next to each rate it gives the CPU time per operation of every process taking
part (this client, the storage service, etcd), read from /proc: on a machine
whose cores are all busy, throughput is the cores divided by the sum, which is
what bounds the ratio.

--floor drives the storage floor (bench/_storage_floor.py: strata's Pipeline
wire adapter over one etcd call per operation, nothing else) in the storage
service's place, to bench/results/storage-floor.json: what any storage hop in
Python with grpc.aio reaches next to raw etcd on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import cpu_seconds, quick_defaults, start_etcd, write_result
from strata import service, tls
from strata.dev import OtlpReceiver, free_port
from strata.etcd import Etcd, prefix_end
from strata.storage import GrpcStorage, ListOptions

ROOT = Path(__file__).resolve().parent.parent


def value(name: str) -> bytes:
    """About 1 KiB of object, as the registry would send it."""
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "bench", "uid": "u" * 36},
            "data": {"key": "v" * 900},
        }
    )


Op = Callable[[int, int], Awaitable[None]]


class Tally:
    """Operations, seconds and CPU seconds per process, summed over rounds."""

    def __init__(self, processes: dict[str, int]) -> None:
        self.processes = processes
        self.count = 0
        self.elapsed = 0.0
        self.cpu = dict.fromkeys(processes, 0.0)
        self.rates: list[float] = []

    @property
    def rate(self) -> float:
        return self.count / self.elapsed

    def cpu_us_per_op(self) -> dict[str, float]:
        return {name: round(seconds / self.count * 1e6, 1) for name, seconds in self.cpu.items()}

    async def run(self, op: Op, concurrency: int, seconds: float, first: int) -> None:
        """One round of op from concurrency workers; each numbers its calls from first."""
        done = [0] * concurrency
        deadline = time.monotonic() + seconds

        async def worker(w: int) -> None:
            i = first
            while time.monotonic() < deadline:
                await op(w, i)
                done[w] += 1
                i += 1

        before = {name: cpu_seconds(pid) for name, pid in self.processes.items()}
        start = time.monotonic()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        elapsed = time.monotonic() - start
        self.count += sum(done)
        self.elapsed += elapsed
        self.rates.append(sum(done) / elapsed)
        for name, pid in self.processes.items():
            self.cpu[name] += cpu_seconds(pid) - before[name]


def _operations(
    store: GrpcStorage, etcd: Etcd, run: str, page_items: int
) -> dict[str, tuple[Op, Op]]:
    """(strata, raw etcd) operation pairs for one concurrency level."""
    written: dict[int, list[int]] = {}
    base = b"/registry/pages/bench/"
    expected_page = min(1000, page_items)

    async def put_strata(w: int, i: int) -> None:
        await store.create(f"/things/{run}/s-{w}-{i}", value(f"s-{w}-{i}"))
        written.setdefault(w, []).append(i)

    async def put_etcd(w: int, i: int) -> None:
        await etcd.put(f"/raw/{run}/e-{w}-{i}".encode(), value(f"e-{w}-{i}"))

    def existing(w: int, i: int) -> str:
        mine = written[w]
        return f"/things/{run}/s-{w}-{mine[i % len(mine)]}"

    async def get_strata(w: int, i: int) -> None:
        await store.get(existing(w, i))

    async def get_etcd(w: int, i: int) -> None:
        await etcd.range(f"/registry{existing(w, i)}".encode())

    async def page_strata(w: int, i: int) -> None:
        result = await store.list("/pages/bench/", ListOptions(limit=1000))
        assert len(result.items) == expected_page

    async def page_etcd(w: int, i: int) -> None:
        result = await etcd.range(base, prefix_end(base), limit=1000)
        assert len(result.kvs) == expected_page

    return {
        "put": (put_strata, put_etcd),
        "get": (get_strata, get_etcd),
        "page": (page_strata, page_etcd),
    }


async def bench(
    args: argparse.Namespace,
    side: str,
    etcd_address: str,
    storage_address: str,
    pids: dict[str, int],
    identity: tls.Identity,
) -> dict[str, object]:
    """The table; side names the server measured (strata, or the floor)."""
    etcd = Etcd(etcd_address)
    channel = service.connect(storage_address, identity, tls.STORAGE_CONTRACT)
    store = GrpcStorage(channel)
    # The page data set: page_items objects, written once for both sides.
    for i in range(args.page_items):
        await store.create(f"/pages/bench/o{i:05d}", value(f"o{i:05d}"))
    strata_processes = {"client": os.getpid(), **pids}
    etcd_processes = {"client": os.getpid(), "etcd": pids["etcd"]}
    table: dict[str, dict[str, dict[str, object]]] = {}
    for concurrency in args.concurrency:
        ops = _operations(store, etcd, f"c{concurrency}-{os.urandom(3).hex()}", args.page_items)
        row: dict[str, dict[str, object]] = {}
        for op, (strata_op, etcd_op) in ops.items():
            seconds = (args.seconds if op != "page" else args.seconds * 2) / args.rounds
            strata, etcd_side = Tally(strata_processes), Tally(etcd_processes)
            for _ in range(args.rounds):
                await strata.run(strata_op, concurrency, seconds, strata.count)
                await etcd_side.run(etcd_op, concurrency, seconds, etcd_side.count)
            ratios = sorted(s / e for s, e in zip(strata.rates, etcd_side.rates, strict=True))
            ratio = statistics.median(ratios)
            row[op] = {
                side: round(strata.rate, 1),
                "etcd": round(etcd_side.rate, 1),
                "ratio": round(ratio, 3),
                "round_ratios": [round(r, 3) for r in ratios],
                "cpu_us_per_op": {
                    side: strata.cpu_us_per_op(),
                    "etcd": etcd_side.cpu_us_per_op(),
                },
            }
            print(
                f"c={concurrency:<3} {op:<5} {side} {strata.rate:9.1f}/s  "
                f"etcd {etcd_side.rate:9.1f}/s  ratio {ratio:.3f} "
                f"(rounds {ratios[0]:.3f}..{ratios[-1]:.3f})  "
                f"cpu us/op {side} {_cpu_text(strata.cpu_us_per_op())}  "
                f"etcd {_cpu_text(etcd_side.cpu_us_per_op())}",
                flush=True,
            )
        table[str(concurrency)] = row
    await channel.close()
    await etcd.close()
    return {
        "seconds_per_phase": args.seconds,
        "rounds": args.rounds,
        "page_items": args.page_items,
        "per_second": table,
    }


def _cpu_text(cpu: dict[str, float]) -> str:
    parts = " + ".join(f"{name} {us:.0f}" for name, us in cpu.items())
    return f"[{parts} = {sum(cpu.values()):.0f}]"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="per side and operation")
    parser.add_argument("--rounds", type=int, default=5, help="strata/etcd alternations")
    parser.add_argument("--concurrency", default="1,16,64")
    parser.add_argument("--page-items", type=int, default=1000)
    parser.add_argument(
        "--floor",
        action="store_true",
        help="drive the storage floor (bench/_storage_floor.py) instead of the storage service",
    )
    quick_defaults(parser, seconds=0.3, rounds=1, concurrency="4", page_items=100)
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    # The server measured: its module, its name in the table and its process's,
    # and the results it writes.
    module, side, pid_name, results = (
        ("bench._storage_floor", "floor", "floor", "storage-floor")
        if args.floor
        else ("services.storage", "strata", "storage", "storage")
    )
    otlp = OtlpReceiver()
    otlp.start()
    with tempfile.TemporaryDirectory(prefix="strata-bench-") as home:
        listen = free_port()
        logs = open(Path(home) / "processes.log", "ab")  # noqa: SIM115 - held by the children
        etcd, etcd_address = start_etcd(Path(home), logs)
        # Both sides serve over mutual TLS, as storage does in a system.
        tls.ensure(Path(home) / "pki")
        served, caller = (tls.files(Path(home) / "pki", s) for s in ("storage", "registry"))
        storage = subprocess.Popen(
            [
                sys.executable,
                "-m",
                module,
                f"--listen=127.0.0.1:{listen}",
                f"--etcd={etcd_address}",
                f"--grpc-ca-file={served.ca}",
                f"--grpc-cert-file={served.cert}",
                f"--grpc-key-file={served.key}",
            ],
            stdout=logs,
            stderr=logs,
            cwd=ROOT,
            env={
                **os.environ,
                "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint,
                "OTEL_EXPORTER_OTLP_INSECURE": "true",
            },
        )
        try:
            identity = caller.read()
            credentials = tls.channel_credentials(identity)
            options = tls.channel_options(tls.STORAGE_CONTRACT)
            with grpc.secure_channel(f"127.0.0.1:{listen}", credentials, options) as probe:
                grpc.channel_ready_future(probe).result(timeout=30)
            pids = {pid_name: storage.pid, "etcd": etcd.pid}
            address = f"127.0.0.1:{listen}"
            result = asyncio.run(bench(args, side, etcd_address, address, pids, identity))
        finally:
            for process in (storage, etcd):
                process.terminate()
                process.wait(10)
            logs.close()
            otlp.stop()
    print(f"wrote {write_result(results, result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
