"""How soon a new CustomResourceDefinition is served, and what custom resources
cost next to a built-in resource of the same size.

For each of --crds CRDs: the seconds from its POST until the gateway's
discovery serves its group version (the issue asks for under a second), and
until a first custom resource is created. Then creates of custom resources
(schema validation, pruning and defaulting on each) and of ConfigMaps, one
after the other for --seconds each, in the same run: their ratio is what the
schema costs.

    .venv/bin/python bench/crds.py --crds 10 --seconds 3
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import gateway_session, percentile, quick_defaults, running_system, write_result
from strata.dev import System

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["color"],
            "properties": {
                "color": {"type": "string", "enum": ["red", "green"]},
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "owner": {"type": "string", "format": "email"},
            },
        }
    },
}


def crd(group: str) -> dict[str, object]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": SCHEMA},
                }
            ],
        },
    }


async def _until_ok(session: aiohttp.ClientSession, method: str, path: str, **kwargs: Any) -> None:
    while True:
        async with session.request(method, path, **kwargs) as response:
            if response.status < 300:
                return
        await asyncio.sleep(0.005)


async def _rate(
    session: aiohttp.ClientSession, path: str, body: dict[str, object], seconds: float
) -> float:
    done = 0
    start = time.monotonic()
    for i in itertools.count():
        if time.monotonic() - start >= seconds:
            break
        named = {**body, "metadata": {"name": f"o{i}"}}
        async with session.post(path, json=named) as response:
            response.raise_for_status()
        done += 1
    return done / (time.monotonic() - start)


async def bench(args: argparse.Namespace, system: System) -> dict[str, object]:
    assert system.endpoints is not None
    session = gateway_session(system.endpoints.gateway, system.ca_file, system.admin_token)
    async with session:
        discovered, first_created = [], []
        for n in range(args.crds):
            group = f"bench{n}.example.com"
            start = time.monotonic()
            async with session.post(CRDS, json=crd(group)) as response:
                response.raise_for_status()
            await _until_ok(session, "GET", f"/apis/{group}/v1")
            discovered.append(time.monotonic() - start)
            body = {
                "apiVersion": f"{group}/v1",
                "kind": "Widget",
                "metadata": {"name": "first"},
                "spec": {"color": "red"},
            }
            await _until_ok(
                session, "POST", f"/apis/{group}/v1/namespaces/default/widgets", json=body
            )
            first_created.append(time.monotonic() - start)
        widget: dict[str, object] = {
            "apiVersion": "bench0.example.com/v1",
            "kind": "Widget",
            "spec": {"color": "green", "owner": "ops@example.com"},
        }
        configmap: dict[str, object] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": {"color": "green"},
        }
        custom = await _rate(
            session, "/apis/bench0.example.com/v1/namespaces/default/widgets", widget, args.seconds
        )
        built_in = await _rate(
            session, "/api/v1/namespaces/default/configmaps", configmap, args.seconds
        )
    return {
        "crds": args.crds,
        "discovered_seconds": {
            "p50": round(percentile(discovered, 50), 3),
            "max": round(max(discovered), 3),
        },
        "first_created_seconds": {
            "p50": round(percentile(first_created, 50), 3),
            "max": round(max(first_created), 3),
        },
        "creates_per_second": {"custom": round(custom, 1), "configmaps": round(built_in, 1)},
        "custom_to_configmap_ratio": round(custom / built_in, 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--crds", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=3.0)
    quick_defaults(parser, crds=1, seconds=0.3)
    args = parser.parse_args()
    with running_system() as system:
        result = asyncio.run(bench(args, system))
    path = write_result("crds", result)
    print(json.dumps(result, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
