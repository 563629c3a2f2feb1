"""What RBAC costs: one authorization decision over 1,000 roles and 1,000
bindings (in this process, the gateway's own RBAC authorizer and union), and
ConfigMap creates per second through the gateway by a user RBAC allows, with
--authorization-mode=RBAC against AlwaysAllow, in one run on one machine.

    python bench/authz.py [--seconds 5] [--rounds 3] [--concurrency 16] [--objects 1000]

The decisions: a request a RoleBinding allows, one a ClusterRoleBinding allows
(the user's group), one nothing allows, a non-resource path, and the first
decision for a user (its bindings looked up in the index rather than
remembered); each timed over many calls, microseconds per decision.

The creates: two systems started as `make run` starts them, one per mode, each
holding the same --objects roles and bindings besides kube's defaults; the
creating user is bound to `edit` in its namespace (the admin, in
system:masters, would pass before RBAC is asked). Phases alternate between the
two modes (in turns, so that neither always goes first) so that both see the
same machine at the same moment. Results go to bench/results/authz.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bench._harness import (
    cpu_seconds,
    gateway_session,
    quick,
    quick_defaults,
    running_system,
    write_result,
)
from services.gateway.authorizers import Attributes, Mode
from services.gateway.authorizers.rbac import RBAC
from services.gateway.authorizers.rbac_policy import Policy, load
from services.gateway.authorizers.union import Union
from services.gateway.user import User
from services.registry.builtin.policy import CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES
from strata.dev import System

Obj = dict[str, Any]
G = "rbac.authorization.k8s.io"
MODES = ("AlwaysAllow", "RBAC")
NAMESPACES = 50
BENCH_TOKEN = "bench-token"


def _rules(i: int) -> list[Obj]:
    return [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [f"s{i}"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["*/scale"], "verbs": ["update", "patch"]},
        {"apiGroups": [f"g{i}.example.com"], "resources": ["*"], "verbs": ["*"]},
    ]


def policy_objects(count: int) -> list[Obj]:
    """count roles and count bindings: seven in ten namespaced, the rest
    cluster-wide; each bound to a user, a group and a ServiceAccount."""
    objects: list[Obj] = []
    for i in range(count):
        namespace = f"ns-{i % NAMESPACES}" if i % 10 < 7 else ""
        kind = "Role" if namespace else "ClusterRole"
        metadata = {"name": f"role-{i}", **({"namespace": namespace} if namespace else {})}
        objects.append(
            {"apiVersion": f"{G}/v1", "kind": kind, "metadata": metadata, "rules": _rules(i)}
        )
        subjects = [
            {"apiGroup": G, "kind": "User", "name": f"user-{i % 200}"},
            {"apiGroup": G, "kind": "Group", "name": f"team-{i % 40}"},
            {"kind": "ServiceAccount", "name": f"sa-{i}", "namespace": namespace or "default"},
        ]
        objects.append(
            {
                "apiVersion": f"{G}/v1",
                "kind": f"{kind}Binding",
                "metadata": {**metadata, "name": f"binding-{i}"},
                "roleRef": {"apiGroup": G, "kind": kind, "name": f"role-{i}"},
                "subjects": subjects,
            }
        )
    return objects


async def _per_call_us(authorizer: Mode, attributes: list[Attributes], calls: int) -> float:
    began = time.perf_counter()
    for i in range(calls):
        await authorizer.authorize(attributes[i % len(attributes)])
    return (time.perf_counter() - began) / calls * 1e6


async def decisions(count: int, calls: int) -> dict[str, float]:
    """Microseconds per decision, by kind (see the module docstring)."""
    policy = Policy()
    load(policy, [*CLUSTER_ROLES, *CLUSTER_ROLE_BINDINGS, *policy_objects(count)])
    union = Union([RBAC(policy)])
    groups = ("team-3", "team-7", "system:authenticated")
    bound = User("user-21", "", groups)  # role-21 is bound to it in ns-21
    cases = {
        "allowed_by_rolebinding": [
            Attributes(bound, "get", "", True, resource="configmaps", namespace="ns-21")
        ],
        # role-7 (cluster-wide) is bound to team-7.
        "allowed_by_clusterrolebinding": [
            Attributes(
                bound, "update", "", True, "apps", resource="deployments", subresource="scale"
            )
        ],
        "not_allowed": [
            Attributes(
                bound, "delete", "", True, resource="configmaps", namespace="ns-21", name="x"
            )
        ],
        "non_resource": [Attributes(bound, "get", "/apis/apps/v1", False)],
        "first_for_a_user": [
            Attributes(
                User(f"new-{i}", "", groups),
                "get",
                "",
                True,
                resource="configmaps",
                namespace="ns-3",
            )
            for i in range(calls)
        ],
    }
    return {
        name: round(await _per_call_us(union, asked, calls), 2) for name, asked in cases.items()
    }


async def _post(session: aiohttp.ClientSession, path: str, body: Obj) -> None:
    async with session.post(path, json=body) as response:
        if response.status not in (201, 409):
            raise RuntimeError(f"POST {path}: {response.status} {await response.text()}")


async def prepare(system: System, objects: list[Obj]) -> None:
    """The roles and bindings, and the bench user bound to edit in namespace bench."""
    assert system.endpoints is not None
    async with gateway_session(system.endpoints.gateway, system.ca_file, system.admin_token) as s:
        for namespace in ("bench", *(f"ns-{i}" for i in range(NAMESPACES))):
            await _post(s, "/api/v1/namespaces", {"metadata": {"name": namespace}})
        binding = {
            "metadata": {"name": "bench-edit"},
            "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": G, "kind": "User", "name": "bench"}],
        }
        await _post(s, f"/apis/{G}/v1/namespaces/bench/rolebindings", binding)
        semaphore = asyncio.Semaphore(16)

        async def create(obj: Obj) -> None:
            namespace = obj["metadata"].get("namespace")
            where = f"/namespaces/{namespace}" if namespace else ""
            async with semaphore:
                await _post(s, f"/apis/{G}/v1{where}/{obj['kind'].lower()}s", obj)

        await asyncio.gather(*(create(o) for o in objects))


async def creates(system: System, label: str, args: argparse.Namespace) -> tuple[float, float]:
    """(creates per second by the bench user, the gateway's CPU microseconds per create)."""
    assert system.endpoints is not None
    session = gateway_session(
        system.endpoints.gateway, system.ca_file, BENCH_TOKEN, connections=args.concurrency * 2
    )
    done = [0]
    deadline = time.monotonic() + args.seconds

    async def worker(w: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            body = {"metadata": {"name": f"{label}-w{w}-{i}"}, "data": {"key": "v" * 200}}
            async with session.post("/api/v1/namespaces/bench/configmaps", json=body) as resp:
                if resp.status != 201:
                    raise RuntimeError(f"create: {resp.status} {await resp.text()}")
                await resp.read()
            done[0] += 1
            i += 1

    gateway = system.process("gateway").pid
    before, began = cpu_seconds(gateway), time.monotonic()
    try:
        await asyncio.gather(*(worker(w) for w in range(args.concurrency)))
    finally:
        await session.close()
    count = max(done[0], 1)
    return done[0] / (time.monotonic() - began), (cpu_seconds(gateway) - before) / count * 1e6


@contextlib.asynccontextmanager
async def _systems(tokens: Path) -> AsyncIterator[dict[str, System]]:
    with contextlib.ExitStack() as stack:
        systems = {}
        for mode in MODES:
            env = {"STRATA_AUTHORIZATION_MODE": mode, "STRATA_TOKEN_AUTH_FILE": str(tokens)}
            systems[mode] = stack.enter_context(running_system(env))
        yield systems


async def throughput(args: argparse.Namespace, objects: list[Obj]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="strata-bench-authz-") as folder:
        tokens = Path(folder) / "tokens.csv"
        tokens.write_text(f"{BENCH_TOKEN},bench,u-bench\n")
        async with _systems(tokens) as systems:
            for system in systems.values():
                await prepare(system, objects)
            rates: dict[str, list[float]] = {m: [] for m in MODES}
            cpu: dict[str, list[float]] = {m: [] for m in MODES}
            for r in range(args.rounds):
                order = MODES if r % 2 == 0 else MODES[::-1]
                for mode in order:
                    rate, spent = await creates(systems[mode], f"r{r}-{mode.lower()}", args)
                    rates[mode].append(rate)
                    cpu[mode].append(spent)
                    print(
                        f"round {r + 1} {mode:>11}: {rate:8.0f} creates/s  "
                        f"gateway cpu {spent:.0f} us/create",
                        flush=True,
                    )
    medians = {m: statistics.median(v) for m, v in rates.items()}
    used = {m: statistics.median(v) for m, v in cpu.items()}
    return {
        "creates_per_second": {m: round(v, 1) for m, v in medians.items()},
        "rounds_creates_per_second": {m: [round(x, 1) for x in v] for m, v in rates.items()},
        "gateway_cpu_us_per_create": {m: round(v, 1) for m, v in used.items()},
        "rbac_cost_percent": round((1 - medians["RBAC"] / medians["AlwaysAllow"]) * 100, 2),
        # Steadier than throughput on a busy machine: what RBAC adds to the
        # gateway's own CPU time per create.
        "rbac_gateway_cpu_cost_percent": round((used["RBAC"] / used["AlwaysAllow"] - 1) * 100, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--objects", type=int, default=1000, help="roles, and as many bindings")
    parser.add_argument("--calls", type=int, default=100_000, help="decisions timed per kind")
    quick_defaults(parser, seconds=0.3, rounds=2, concurrency=4, objects=1000, calls=2000)
    args = parser.parse_args()
    decided = asyncio.run(decisions(args.objects, args.calls))
    print(f"decision us over {args.objects} roles and bindings: {decided}", flush=True)
    # The systems hold fewer objects in a smoke run: creating them is most of its time.
    held = 100 if quick() else args.objects
    measured = asyncio.run(throughput(args, policy_objects(held)))
    result = {
        "roles": args.objects,
        "bindings": args.objects,
        "decision_us": decided,
        "roles_and_bindings_each_in_the_systems": held,
        "concurrency": args.concurrency,
        "seconds_per_phase": args.seconds,
        "rounds": args.rounds,
        **measured,
    }
    path = write_result("authz", result)
    print(
        json.dumps(
            {
                "decision_us": decided,
                "creates_per_second": measured["creates_per_second"],
                "rbac_cost_percent": measured["rbac_cost_percent"],
                "rbac_gateway_cpu_cost_percent": measured["rbac_gateway_cpu_cost_percent"],
            },
            indent=2,
        )
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
