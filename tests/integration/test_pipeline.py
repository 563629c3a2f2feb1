"""The storage Pipeline stream: many calls in flight on one stream, and a
broken stream failing its calls with Unavailable before the next call
reconnects."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from services.storage.store import EtcdStorage
from strata.dev import free_port
from strata.etcd import Etcd
from strata.storage import (
    GrpcStorage,
    KeyNotFound,
    StorageError,
    StorageServicer,
    Unavailable,
    add_to_server,
)

OBJ = b'{"apiVersion":"v1","kind":"Thing","metadata":{"name":"p"}}'


async def _server(etcd: Etcd, port: int) -> grpc.aio.Server:
    server = grpc.aio.server()
    add_to_server(StorageServicer(EtcdStorage(etcd, "/pipeline-test")), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server


async def test_many_calls_share_the_stream_and_errors_stay_typed(etcd: Etcd) -> None:
    port = free_port()
    server = await _server(etcd, port)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    store = GrpcStorage(channel)
    try:
        created = await asyncio.gather(*(store.create(f"/things/ns/o{i}", OBJ) for i in range(100)))
        assert len({c.resource_version for c in created}) == 100
        got = await asyncio.gather(*(store.get(f"/things/ns/o{i}") for i in range(100)))
        assert [g.key for g in got] == [f"/things/ns/o{i}" for i in range(100)]
        with pytest.raises(KeyNotFound):
            await store.get("/things/ns/missing")
    finally:
        await store.close()
        await channel.close()
        await server.stop(None)


async def test_a_broken_stream_fails_its_calls_and_the_next_call_reconnects(etcd: Etcd) -> None:
    port = free_port()
    server = await _server(etcd, port)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    store = GrpcStorage(channel)
    try:
        assert await store.current_revision() > 0
        await server.stop(None)
        with pytest.raises(Unavailable):
            await store.current_revision()
        server = await _server(etcd, port)
        async with asyncio.timeout(20):
            while True:
                try:
                    assert await store.current_revision() > 0
                    break
                except Unavailable:
                    await asyncio.sleep(0.2)
    finally:
        await store.close()
        await channel.close()
        await server.stop(None)


class _Broken:
    """A storage whose reads fail with a bug rather than a storage error."""

    async def get(self, key: str, opts: object = None) -> object:
        raise RuntimeError("bug")


async def test_a_failing_call_is_answered_not_left_waiting() -> None:
    server = grpc.aio.server()
    add_to_server(StorageServicer(_Broken()), server)  # type: ignore[arg-type]
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    store = GrpcStorage(channel)
    try:
        async with asyncio.timeout(10):
            with pytest.raises(StorageError, match="RuntimeError: bug"):
                await store.get("/things/ns/a")
    finally:
        await store.close()
        await channel.close()
        await server.stop(None)


class _CountingStreams(StorageServicer):
    """A StorageServicer that counts the Pipeline streams opened to it."""

    opened = 0

    async def Pipeline(  # type: ignore[override]  # yields Results as bytes, as its base does
        self, request_iterator: Any, context: Any
    ) -> AsyncIterator[bytes]:
        _CountingStreams.opened += 1
        async for results in super().Pipeline(request_iterator, context):
            yield results


async def test_lists_go_on_a_stream_of_their_own(etcd: Etcd) -> None:
    """A list's answer may be megabytes, and a stream's messages arrive in
    order: the small calls' answers must not queue behind it on one stream."""
    port = free_port()
    server = grpc.aio.server()
    add_to_server(_CountingStreams(EtcdStorage(etcd, "/pipeline-lanes")), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    store = GrpcStorage(channel)
    _CountingStreams.opened = 0
    try:
        await store.create("/things/ns/a", OBJ)
        assert _CountingStreams.opened == 1
        await asyncio.gather(store.list("/things/"), store.get("/things/ns/a"))
        assert _CountingStreams.opened == 2
        for _ in range(3):
            listed, got = await asyncio.gather(store.list("/things/"), store.get("/things/ns/a"))
            assert [o.key for o in listed.items] == [got.key]
        assert _CountingStreams.opened == 2  # one stream a lane, kept
    finally:
        await store.close()
        await channel.close()
        await server.stop(None)
