"""A write that carries its envelope on a real etcd: etcd keeps the writer's
final bytes exactly (encrypted, when configured, from those very bytes), the
storage service decodes no JSON for it, and a storage that never saw the write
reads those bytes back stamped as the writer's answer was. A write without an
envelope is decoded and made final by storage, to the same bytes."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest

from services.storage.encryption import AESGCM, ResourcePattern, Rule, Transformers
from services.storage.store import EtcdStorage
from strata.etcd import Etcd
from strata.storage import ObjectTooLarge, envelopes

EVERYTHING = (ResourcePattern(resource=None, group=None),)
KEYS = ["/configmaps/ns/a", "/example.com/widgets/ns/a"]


def _object(**data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Thing",
        "metadata": {
            "name": "a",
            "namespace": "ns",
            "uid": "uid-a",
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "labels": {"app": "a"},
        },
        "data": data,
    }


@contextmanager
def storage_decodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The JSON decodes the storage service (and the storage library under it)
    makes meanwhile, by the name of the module that made each."""
    made: list[str] = []

    def counted(decode: Callable[..., Any]) -> Callable[..., Any]:
        def decoding(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller.startswith(("services.storage", "strata.storage")):
                made.append(caller)
            return decode(*args, **kwargs)

        return decoding

    with monkeypatch.context() as patch:
        patch.setattr(orjson, "loads", counted(orjson.loads))
        patch.setattr(json, "loads", counted(json.loads))
        yield made


def _prefix() -> str:
    return f"/envelopes-{os.urandom(4).hex()}"


@pytest.mark.parametrize("key", KEYS)
async def test_an_enveloped_write_is_stored_as_given_without_a_decode(
    etcd: Etcd, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = _prefix()
    storage = EtcdStorage(etcd, prefix)
    created_as = envelopes.final(key, _object(v="1"))
    updated_as = envelopes.final(key, _object(v="2"))
    with storage_decodes(monkeypatch) as decodes:
        created = await storage.create(key, created_as.value, envelope=created_as.envelope)
        stored = (await etcd.range((prefix + key).encode())).kvs[0].value
        updated = await storage.update(
            key,
            updated_as.value,
            expected_resource_version=created.resource_version,
            envelope=updated_as.envelope,
        )
    assert decodes == []
    assert stored == created_as.value
    assert (await etcd.range((prefix + key).encode())).kvs[0].value == updated_as.value
    assert created == envelopes.answer(key, created_as, created.resource_version)
    assert updated == envelopes.answer(key, updated_as, updated.resource_version)
    # A storage that never saw the write decodes what etcd holds, and answers
    # it as the writer was answered (objects.stamped's read path included).
    assert await EtcdStorage(etcd, prefix).get(key) == updated


@pytest.mark.parametrize("key", KEYS)
async def test_a_write_without_an_envelope_is_decoded_and_made_final_by_storage(
    etcd: Etcd, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = _prefix()
    storage = EtcdStorage(etcd, prefix)
    body = _object(v="1")
    body["metadata"]["resourceVersion"] = "5"
    with storage_decodes(monkeypatch) as decodes:
        created = await storage.create(key, orjson.dumps(body))
    assert decodes == ["services.storage.objects"]
    final = envelopes.final(key, body)
    assert (await etcd.range((prefix + key).encode())).kvs[0].value == final.value
    assert created == envelopes.answer(key, final, created.resource_version)


async def test_encryption_sees_the_final_bytes(etcd: Etcd) -> None:
    prefix, key = _prefix(), KEYS[0]
    transformers = Transformers([Rule(EVERYTHING, (AESGCM(key_name="k", secret=os.urandom(32)),))])
    storage = EtcdStorage(etcd, prefix, transformers=transformers)
    written = envelopes.final(key, _object(v="1"))
    created = await storage.create(key, written.value, envelope=written.envelope)
    ekey = (prefix + key).encode()
    sealed = (await etcd.range(ekey)).kvs[0].value
    assert sealed.startswith(b"k8s:enc:aesgcm:v1:k:")
    assert transformers.read(key, ekey, sealed).plaintext == written.value
    assert await EtcdStorage(etcd, prefix, transformers=transformers).get(key) == created


async def test_an_enveloped_write_over_the_limit_is_refused_as_before(etcd: Etcd) -> None:
    prefix, key = _prefix(), KEYS[0]
    storage = EtcdStorage(etcd, prefix)
    big = _object(blob="x" * 1_600_000)
    value = orjson.dumps(big)
    envelope = envelopes.envelope_of(big["metadata"])
    envelope.resource_version_at = envelopes.built_in_place(value)
    with pytest.raises(ObjectTooLarge) as enveloped:
        await storage.create(key, value, envelope=envelope)
    with pytest.raises(ObjectTooLarge) as plain:
        await storage.create(key, value)
    assert str(enveloped.value) == str(plain.value)
    assert not (await etcd.range((prefix + key).encode())).kvs
