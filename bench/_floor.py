"""The floor server: the least a Python API server on this machine can do for
bench/api.py's creates and bench/watch.py's watchers, to measure strata
against in the same way.

It is the gateway's stack (aiohttp on uvloop, TLS with the same kind of
certificate, strata's etcd client) with two routes on ConfigMaps and nothing
else: a POST parses the JSON body, puts in the namespace and what every server
stamps (uid, creationTimestamp, managedFields) and writes it with one
create-if-absent etcd Txn (the one etcd call a strata create makes), answering
201 with the object at its resourceVersion; a watch (GET with watch=1) gets a
chunked response, and one etcd watch on every ConfigMap has each new one
framed once and written to every open watch response, as the gateway does.
No authentication, admission, defaulting, validation, watch cache, tracing or
namespace filtering: whatever a real server does on top costs more, so the
floor's numbers bound what any can reach here.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import ssl
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path

import orjson
from aiohttp import web

from bench._harness import gateway_session, start_etcd
from services.gateway.pki import ensure_pki
from strata import service
from strata.dev import free_port
from strata.etcd import Etcd, prefix_end
from strata.proto.etcd.etcdserverpb import rpc_pb2
from strata.proto.etcd.mvccpb import kv_pb2

PREFIX = b"/registry/configmaps/"
ROUTE = "/api/v1/namespaces/{namespace}/configmaps"


@dataclass(frozen=True)
class Floor:
    """A running floor server: where it listens, its CA, and the PIDs of it
    ("floor") and its etcd ("etcd")."""

    url: str
    ca_file: Path
    etcd_address: str
    processes: dict[str, int]


def create_request(key: bytes, value: bytes) -> rpc_pb2.TxnRequest:
    """The create-if-absent Txn of key (what a storage create sends etcd)."""
    request = rpc_pb2.TxnRequest()
    compare = request.compare.add()
    compare.key, compare.target = key, rpc_pb2.Compare.CREATE
    compare.result, compare.create_revision = rpc_pb2.Compare.EQUAL, 0
    put = request.success.add().request_put
    put.key, put.value = key, value
    return request


async def _serve(port: int, etcd_address: str, cert: str, key: str) -> None:
    etcd = Etcd(etcd_address)
    watchers: set[asyncio.Transport] = set()

    async def create(request: web.Request) -> web.Response:
        namespace = request.match_info["namespace"]
        body = orjson.loads(await request.read())
        metadata = body["metadata"]
        # What every API server stamps on a create, so that objects and events
        # weigh what strata's and kube's do.
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        metadata.update(
            namespace=namespace,
            creationTimestamp=now,
            managedFields=[
                {
                    "manager": request.headers.get("User-Agent", "").split("/")[0],
                    "operation": "Update",
                    "apiVersion": body.get("apiVersion", "v1"),
                    "time": now,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {f"f:{field}": {} for field in body.get("data", {})}},
                }
            ],
            uid=str(uuid.uuid4()),
        )
        etcd_key = PREFIX + f"{namespace}/{metadata['name']}".encode()
        answer = await etcd.txn(create_request(etcd_key, orjson.dumps(body)))
        if not answer.succeeded:
            return web.Response(status=409)
        metadata["resourceVersion"] = str(answer.header.revision)
        return web.Response(status=201, body=orjson.dumps(body), content_type="application/json")

    async def watch(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_type = "application/json"
        response.enable_chunked_encoding()
        await response.prepare(request)
        transport = request.transport
        assert transport is not None
        watchers.add(transport)
        # Held open: fan_out drops the transport once its client has gone.
        await asyncio.Event().wait()
        return response

    async def fan_out() -> None:
        async for answer in etcd.watch(PREFIX, prefix_end(PREFIX)):
            for event in answer.events:
                if event.type != kv_pb2.Event.PUT:
                    continue
                stored = orjson.loads(event.kv.value)
                stored["metadata"]["resourceVersion"] = str(event.kv.mod_revision)
                line = orjson.dumps({"type": "ADDED", "object": stored}) + b"\n"
                framed = b"%x\r\n%s\r\n" % (len(line), line)
                for transport in list(watchers):
                    if transport.is_closing():
                        watchers.discard(transport)
                    else:
                        transport.write(framed)

    async def get(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") in ("1", "true"):
            return await watch(request)
        return web.Response(status=404)

    app = web.Application()
    app.router.add_post(ROUTE, create)
    app.router.add_get(ROUTE, get)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    fanning = asyncio.create_task(fan_out())
    await web.TCPSite(runner, "127.0.0.1", port, ssl_context=context).start()
    await fanning


def _server(port: int, etcd_address: str, cert: str, key: str) -> None:
    service.run(_serve(port, etcd_address, cert, key))


async def _ready(url: str, ca_file: Path, server: BaseProcess) -> None:
    session = gateway_session(url, ca_file, "floor")
    try:
        for attempt in range(100):
            if not server.is_alive():
                raise RuntimeError(f"the floor server exited ({server.exitcode})")
            body = {"metadata": {"name": f"ready-{attempt}"}}
            try:
                async with session.post(ROUTE.format(namespace="ready"), json=body) as resp:
                    if resp.status == 201:
                        return
            except OSError:
                pass
            await asyncio.sleep(0.1)
        raise RuntimeError("the floor server did not start")
    finally:
        await session.close()


@contextmanager
def running_floor() -> Iterator[Floor]:
    """etcd and the floor server on loopback, stopped (by PID) on the way out."""
    with tempfile.TemporaryDirectory(prefix="strata-floor-") as home:
        port = free_port()
        etcd, etcd_address = start_etcd(Path(home), subprocess.DEVNULL)
        ca, cert, key = ensure_pki(Path(home) / "pki", ["127.0.0.1"])
        floor = multiprocessing.get_context("spawn").Process(
            target=_server, args=(port, etcd_address, str(cert), str(key))
        )
        floor.start()
        try:
            assert floor.pid is not None
            url = f"https://127.0.0.1:{port}"
            asyncio.run(_ready(url, ca, floor))
            yield Floor(url, ca, etcd_address, {"floor": floor.pid, "etcd": etcd.pid})
        finally:
            floor.terminate()
            floor.join(10)
            etcd.terminate()
            etcd.wait(10)
