"""A Secret's values reach no log: after a Secret is created, read, listed,
updated, patched, refused and deleted through the gateway, and read from
storage and the cacher directly by the callers they serve, none of the
system's logs holds a value, plainly or base64-encoded."""

from __future__ import annotations

import base64
import uuid

import aiohttp
import orjson

from strata.dev import System
from strata.proto.storage.v1 import storage_pb2, storage_pb2_grpc


async def test_no_log_holds_a_secret_value(http: aiohttp.ClientSession, system: System) -> None:
    name = f"hush-{uuid.uuid4().hex[:8]}"
    plain = f"plain-{uuid.uuid4().hex}"
    given = f"given-{uuid.uuid4().hex}"
    renewed = f"renewed-{uuid.uuid4().hex}"
    values = (plain, given, renewed)
    path = "/api/v1/namespaces/default/secrets"
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "data": {"given": base64.b64encode(given.encode()).decode()},
        "stringData": {"plain": plain},
    }
    async with http.post(path, json=body) as created:
        assert created.status == 201, await created.text()
    async with http.post(path, json=body) as again:
        assert again.status == 409
    refused = {**body, "metadata": {"name": "Not A Name"}}
    async with http.post(path, json=refused) as bad:
        assert bad.status == 422
    async with http.get(f"{path}/{name}") as got:
        secret = await got.json()
    async with http.get(path) as listed:
        assert listed.status == 200
    secret["data"]["renewed"] = base64.b64encode(renewed.encode()).decode()
    async with http.put(f"{path}/{name}", json=secret) as updated:
        assert updated.status == 200, await updated.text()
    patch = {"stringData": {"patched": plain}}
    headers = {"Content-Type": "application/merge-patch+json"}
    async with http.patch(f"{path}/{name}", data=orjson.dumps(patch), headers=headers) as patched:
        assert patched.status == 200, await patched.text()
    key = f"/secrets/default/{name}"
    for service, caller in (("storage", "registry"), ("cacher", "registry")):
        async with system.grpc_channel(service, caller) as channel:
            stub = storage_pb2_grpc.StorageStub(channel)
            await stub.Get(storage_pb2.GetRequest(key=key), timeout=10)
    async with http.delete(f"{path}/{name}") as deleted:
        assert deleted.status == 200

    logs = sorted((system.home / "logs").iterdir())
    assert {p.name for p in logs} >= {f"{n}.log" for n in ("storage", "cacher", "registry")}
    for log in logs:
        text = log.read_bytes()
        for value in values:
            for form in (value.encode(), base64.b64encode(value.encode())):
                assert form not in text, f"{log.name} holds a secret value"
