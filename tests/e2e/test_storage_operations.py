"""The storage service as an operator sees it: Prometheus metrics under kube's
names, and a dead etcd answered with a Status instead of a hang."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import aiohttp
import orjson

from strata.dev import System
from tests.support.sessions import admin_session


async def test_storage_metrics(http: aiohttp.ClientSession, system: System) -> None:
    assert system.endpoints is not None and system.endpoints.storage_metrics
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "metered"}}
    async with http.post("/api/v1/namespaces/default/configmaps", json=body) as response:
        assert response.status == 201
    async with aiohttp.ClientSession() as plain:
        text = ""
        async with asyncio.timeout(10):
            while not re.search(r'apiserver_storage_objects\{resource="configmaps"\} [1-9]', text):
                async with plain.get(system.endpoints.storage_metrics) as response:
                    assert response.status == 200
                    assert response.content_type == "text/plain"
                    text = await response.text()
                await asyncio.sleep(0.1)
    assert re.search(
        r'etcd_request_duration_seconds_count\{operation="create",type="configmaps"\} [1-9]', text
    )
    assert re.search(
        r'etcd_request_duration_seconds_bucket\{le="0.005",operation="list",type="\w+"\}', text
    )
    count = re.search(r'apiserver_storage_objects\{resource="configmaps"\} (\d+)', text)
    assert count is not None and int(count.group(1)) >= 1
    assert "apiserver_storage_transformation_duration_seconds" in text


async def test_dead_etcd_is_a_503_status_not_a_hang(tmp_path: Path) -> None:
    system = System(tmp_path / "home", gateway_port=0, env={"STRATA_ETCD_REQUEST_TIMEOUT": "2s"})
    await asyncio.to_thread(system.start)
    try:
        assert system.endpoints is not None
        etcd = system.process("etcd")
        etcd.kill()
        await asyncio.to_thread(etcd.wait)
        async with admin_session(system) as http:
            for method, path in (
                ("GET", "/api/v1/namespaces/default"),
                ("POST", "/api/v1/namespaces/default/configmaps"),
            ):
                started = time.monotonic()
                body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
                async with http.request(method, path, json=body) as response:
                    status = orjson.loads(await response.read())
                assert time.monotonic() - started < 30
                assert response.status in (503, 504), status
                assert status["kind"] == "Status" and status["code"] == response.status
    finally:
        await asyncio.to_thread(system.stop)
