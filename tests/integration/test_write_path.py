"""What one write costs between the registry and etcd, counted on the real path
(the registry's Store, the cacher and the storage service, each in this
process, on a real etcd): a JSON create is parsed once and encoded once, and a
patch is one read of storage, and one more for each conflict (kube's patcher
within one GuaranteedUpdate)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import grpc
import orjson
import pytest

from services.registry.builtin.resources import CONFIGMAPS
from services.registry.generic import warnings
from services.registry.generic.patching.patcher import Patch
from services.registry.generic.store import Store
from strata.api import patch_types
from strata.proto.storage.v1 import storage_pb2
from strata.storage import GetOptions, GrpcStorage, envelopes
from tests.support import hops

Obj = dict[str, Any]
# Where the write path's code lives (the test's own calls are not counted).
_PATH = ("services.", "strata.")


def _watching(frame: Any) -> bool:
    """Whether a call is the storage's watch feeding the cacher: it decodes an
    event whose write's answer it has not remembered yet (the answer and the
    event race), which is the watch's cost, not the write's."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "watch" and frame.f_globals.get("__name__") == "services.storage.store":
            return True
        frame = frame.f_back
    return False


class Counted(GrpcStorage):
    """The registry's storage (the cacher), counting reads and writes; the
    first write can be made to meet a concurrent one."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        super().__init__(channel)
        self.reads = 0
        self.writes = 0
        self.interfere: Callable[[], Any] | None = None

    async def get(self, key: str, opts: GetOptions = GetOptions()) -> storage_pb2.Object:
        self.reads += 1
        return await super().get(key, opts)

    async def update(self, key: str, value: bytes, **kwargs: Any) -> storage_pb2.Object:
        self.writes += 1
        if self.interfere is not None:
            interfere, self.interfere = self.interfere, None
            await interfere()
        return await super().update(key, value, **kwargs)


@pytest.fixture
async def storage(cacher_address: str) -> AsyncIterator[Counted]:
    async with hops.dial(cacher_address) as channel:
        counted = Counted(channel)
        yield counted
        await counted.close()


@contextmanager
def json_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[str]]]:
    """The JSON decodes and encodes strata's code makes meanwhile, by the
    module that made each."""
    made: dict[str, list[str]] = {"decodes": [], "encodes": []}

    def counted(call: Callable[..., Any], kind: str) -> Callable[..., Any]:
        def calling(*args: Any, **kwargs: Any) -> Any:
            frame = sys._getframe(1)
            caller = frame.f_globals.get("__name__", "")
            if caller.startswith(_PATH) and not _watching(frame):
                made[kind].append(caller)
            return call(*args, **kwargs)

        return calling

    with monkeypatch.context() as patch:
        patch.setattr(orjson, "loads", counted(orjson.loads, "decodes"))
        patch.setattr(json, "loads", counted(json.loads, "decodes"))
        patch.setattr(orjson, "dumps", counted(orjson.dumps, "encodes"))
        yield made


def _configmap(name: str) -> bytes:
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": "a"}},
            "data": {"k": "v", "say": 'a "quoted": word'},
        }
    )


async def test_a_json_create_is_parsed_once_and_encoded_once(
    storage: Counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(CONFIGMAPS, storage)
    body = _configmap("once")
    with warnings.collecting() as given, json_calls(monkeypatch) as made:
        created = await store.create("write-path", body)
    assert given == []
    assert made == {
        "decodes": ["services.registry.generic.bodies"],
        "encodes": ["strata.storage.envelopes"],
    }
    assert orjson.loads(created)["data"] == orjson.loads(body)["data"]
    stored = await storage.get(CONFIGMAPS.key("write-path", "once"))
    assert envelopes.final(stored.key, orjson.loads(stored.value)).value == (
        envelopes.final(stored.key, orjson.loads(created)).value
    )


async def test_a_body_that_gives_a_field_twice_is_read_again_and_warned_of(
    storage: Counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(CONFIGMAPS, storage)
    body = _configmap("twice").replace(b'"data":{', b'"data":{"k":"first",')
    with warnings.collecting() as given, json_calls(monkeypatch) as made:
        await store.create("write-path", body)
    assert given == ['duplicate field "data.k"']
    assert made["decodes"] == [
        "services.registry.generic.bodies",
        "strata.api.strict_decoding",
    ]


async def _created(store: Store, name: str) -> None:
    await store.create("write-path", _configmap(name))


MERGE = Patch(type=patch_types.MERGE_PATCH, body=b'{"data":{"k":"patched"}}')


async def test_a_patch_is_one_read_and_one_write(storage: Counted) -> None:
    store = Store(CONFIGMAPS, storage)
    await _created(store, "patched")
    storage.reads = storage.writes = 0
    with warnings.collecting():
        value, created = await store.patch("write-path", "patched", MERGE)
    assert (storage.reads, storage.writes, created) == (1, 1, False)
    assert orjson.loads(value)["data"]["k"] == "patched"


async def test_a_patch_reads_once_more_for_each_conflict(
    storage: Counted, cacher_address: str
) -> None:
    store = Store(CONFIGMAPS, storage)
    await _created(store, "raced")
    channel = hops.dial(cacher_address)
    other = Store(CONFIGMAPS, GrpcStorage(channel))

    async def concurrent_write() -> None:
        with warnings.collecting():
            await other.patch(
                "write-path",
                "raced",
                Patch(type=patch_types.MERGE_PATCH, body=b'{"data":{"other":"x"}}'),
            )

    storage.interfere = concurrent_write
    storage.reads = storage.writes = 0
    try:
        with warnings.collecting():
            value, _ = await store.patch("write-path", "raced", MERGE)
    finally:
        await channel.close()
    assert (storage.reads, storage.writes) == (2, 2)
    assert orjson.loads(value)["data"] == {"k": "patched", "say": 'a "quoted": word', "other": "x"}


async def test_an_apply_reads_once_and_creates_what_is_not_there(storage: Counted) -> None:
    store = Store(CONFIGMAPS, storage)
    applied = Patch(type=patch_types.APPLY_PATCH, body=_configmap("applied"))
    storage.reads = storage.writes = 0
    with warnings.collecting():
        value, created = await store.patch("write-path", "applied", applied, field_manager="me")
    assert (storage.reads, storage.writes, created) == (1, 0, True)
    managers = [e["manager"] for e in orjson.loads(value)["metadata"]["managedFields"]]
    assert managers == ["me"]
    storage.reads = 0
    with warnings.collecting():
        _, created = await store.patch("write-path", "applied", applied, field_manager="me")
    assert (storage.reads, created) == (1, False)
