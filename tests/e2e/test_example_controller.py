"""examples/configmap_copier.py, the example controller, against the running
system: a copy of the source ConfigMap appears in every labelled namespace,
follows the source's changes, comes back when deleted, and stays out of
namespaces without the label."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

from examples.configmap_copier import run
from strata.client import DynamicClient, NotFound, Resource, RestClient, load_config
from strata.dev import System

NAMESPACES = Resource(version="v1", resource="namespaces", namespaced=False)
CONFIGMAPS = Resource(version="v1", resource="configmaps")


async def data_in(cms: Any, namespace: str, name: str) -> dict[str, str] | None:
    try:
        return dict((await cms.get(name, namespace)).get("data") or {})
    except NotFound:
        return None


async def eventually(check: Any, want: Any, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while (got := await check()) != want:
        assert time.monotonic() < deadline, f"still {got!r}, not {want!r}"
        await asyncio.sleep(0.1)


async def test_the_example_controller_keeps_copies(system: System) -> None:
    suffix = uuid.uuid4().hex[:6]
    source_ns, labelled, plain = f"src-{suffix}", f"team-{suffix}", f"other-{suffix}"
    async with RestClient(load_config(system.kubeconfig)) as rest:
        dynamic = DynamicClient(rest)
        namespaces, cms = dynamic.resource(NAMESPACES), dynamic.resource(CONFIGMAPS)
        await namespaces.create({"metadata": {"name": source_ns}})
        await cms.create({"metadata": {"name": "shared"}, "data": {"v": "1"}}, source_ns)
        controller = asyncio.create_task(run(rest, f"{source_ns}/shared"))
        try:
            label = {"strata.dev/copy": "true"}
            await namespaces.create({"metadata": {"name": labelled, "labels": label}})
            await namespaces.create({"metadata": {"name": plain}})
            await eventually(lambda: data_in(cms, labelled, "shared"), {"v": "1"})
            await cms.patch("shared", {"data": {"v": "2"}}, source_ns)
            await eventually(lambda: data_in(cms, labelled, "shared"), {"v": "2"})
            await cms.delete("shared", labelled)
            await eventually(lambda: data_in(cms, labelled, "shared"), {"v": "2"})
            assert await data_in(cms, plain, "shared") is None
            copy = await cms.get("shared", labelled)
            assert copy["metadata"]["managedFields"][0]["manager"] == "configmap-copier"
        finally:
            controller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await controller
