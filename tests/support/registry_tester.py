"""A table-driven tester for the registry's resources, through the real gateway
and services on a real etcd.

Each resource's tests are a table of Cases: an object to create and, for an
update case, a change to make to what was created. A case with causes must be
refused with 422 Invalid naming exactly those field causes, and leave etcd as
it was; any other must be stored, and then read back with what `expect` says
(dotted paths). Every object a case stores is deleted again (its finalizers
cleared if that only marked it), and must then be gone.
"""

from __future__ import annotations

import asyncio
import copy
import io
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import aiohttp
import orjson

from services.registry.generic.strategy import lookup
from strata.etcd import Etcd

Obj = dict[str, Any]
JSON = "application/json"
# (reason, field, message) of one StatusCause.
Cause = tuple[str, str, str]


# What the system writes by itself whatever a test does: the registry leader's
# and the gateways' Lease renewals, the `kubernetes` Service the registry
# makes (with its ClusterIP) once the gateway is up, the aggregated
# ClusterRoles (admin, edit, view) the aggregation controller fills in shortly
# after start, and each namespace's `default` ServiceAccount (see background).
BACKGROUND_KEYS = (
    b"/registry/leases/kube-system/",
    b"/registry/clusterroles/admin",
    b"/registry/clusterroles/edit",
    b"/registry/clusterroles/view",
    b"/registry/services/specs/default/kubernetes",
    b"/registry/services/endpoints/default/kubernetes",
    b"/registry/ipaddresses/10.96.0.1",
)


DEFAULT_ACCOUNTS = re.compile(rb"^/registry/serviceaccounts/[^/]+/default$")
# ClusterIPs and NodePorts are released (their records deleted) in the background
# when the namespace lifecycle controller empties a namespace an earlier test
# deleted; a leak would be a record written, which still counts.
RELEASES = (b"/registry/ipaddresses/", b"/registry/servicenodeports/")


def background(key: bytes) -> bool:
    """Whether the system writes key by itself: one of BACKGROUND_KEYS, or the
    `default` ServiceAccount the controller makes in a namespace a moment after
    a test created it."""
    return key.startswith(BACKGROUND_KEYS) or DEFAULT_ACCOUNTS.match(key) is not None


async def revision(etcd: Etcd) -> int:
    return (await etcd.range(b"/", count_only=True)).header.revision


async def writes_since(etcd: Etcd, before: int) -> list[bytes]:
    """The keys written or deleted after revision before (background writes left
    out), read from an etcd watch replaying what happened since."""
    now = await revision(etcd)
    written: list[bytes] = []
    if now == before:
        return written
    async with asyncio.timeout(10):
        async for response in etcd.watch(b"/", b"\0", start_revision=before + 1):
            for event in response.events:
                released = event.type == event.DELETE and event.kv.key.startswith(RELEASES)
                if not background(event.kv.key) and not released:
                    written.append(event.kv.key)
                if event.kv.mod_revision >= now:
                    return written
    return written


async def refused(
    http: aiohttp.ClientSession,
    etcd: Etcd,
    method: str,
    path: str,
    *,
    untouched: bytes | None = None,
    **kwargs: Any,
) -> Obj:
    """The Status a refused request answered with; etcd must not have moved (or,
    given untouched, that key: for when a controller writes at the same time)."""
    before = await revision(etcd)
    async with http.request(method, path, **kwargs) as response:
        body: Obj = orjson.loads(await response.read())
        assert response.content_type == "application/json"
        assert body["code"] == response.status
    changed = await writes_since(etcd, before)
    if untouched is not None:
        changed = [key for key in changed if key == untouched]
    assert changed == [], f"a refused request changed etcd: {changed}"
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    return body


def invalid(field: str, shown: str, detail: str) -> Cause:
    """A FieldValueInvalid cause, the bad value shown as kube prints it."""
    return ("FieldValueInvalid", field, f"Invalid value: {shown}: {detail}")


def required(field: str, detail: str = "") -> Cause:
    return (
        "FieldValueRequired",
        field,
        f"Required value: {detail}" if detail else "Required value",
    )


def unsupported(field: str, shown: str, *supported: str) -> Cause:
    """A FieldValueNotSupported cause listing the values kube supports there."""
    listed = ", ".join(f'"{v}"' for v in supported)
    return (
        "FieldValueNotSupported",
        field,
        f"Unsupported value: {shown}: supported values: {listed}",
    )


def configmap(name: str, metadata: Obj | None = None, **fields: Any) -> Obj:
    """A ConfigMap body: its name, more metadata, and top-level fields (data...)."""
    meta = {"name": name, **(metadata or {})}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, **fields}


async def gone(http: aiohttp.ClientSession, path: str, within: float = 30) -> None:
    """Return once path answers 404 (what is deleting has finished)."""
    async with asyncio.timeout(within):
        while True:
            async with http.get(path) as response:
                if response.status == 404:
                    return
            await asyncio.sleep(0.1)


async def until(
    http: aiohttp.ClientSession,
    path: str,
    check: Callable[[Obj], Any],
    within: float = 15,
    *,
    absent_ok: bool = False,
) -> Obj:
    """The object at path once check(object) holds (a controller's work is
    asynchronous); with absent_ok, a 404 meanwhile is waited out too (kube's
    is plain text for a group version not served yet)."""
    async with asyncio.timeout(within):
        while True:
            async with http.get(path) as response:
                raw = await response.read()
                missing = absent_ok and response.status == 404
                assert missing or response.status == 200, raw
            if not missing and check(found := orjson.loads(raw)):
                return cast(Obj, found)
            await asyncio.sleep(0.1)


async def answer(
    http: aiohttp.ClientSession, method: str, path: str, code: int, **kwargs: Any
) -> Obj:
    """The JSON a request answered with, which must come with code."""
    async with http.request(method, path, **kwargs) as response:
        body: Obj = orjson.loads(await response.read())
        assert response.status == code, body
    return body


async def new_namespace(http: aiohttp.ClientSession, prefix: str) -> str:
    """A namespace of a test's own."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    await answer(http, "POST", "/api/v1/namespaces", 201, json=body)
    return name


@dataclass(frozen=True, kw_only=True)
class Case:
    id: str
    body: Obj
    # For an update case: changes the created object before it is PUT back.
    update: Callable[[Obj], None] | None = None
    # The causes of the 422 the write must get; empty: the write must succeed.
    causes: tuple[Cause, ...] = ()
    # Dotted paths and the values the stored object must have.
    expect: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.id


def as_json(body: Obj) -> dict[str, Any]:
    """Request arguments sending body as JSON (streamed, as aiohttp wants large
    bodies to be)."""
    return {"data": io.BytesIO(orjson.dumps(body)), "headers": {"Content-Type": JSON}}


class RegistryTester:
    """Runs Cases against one resource's collection (namespaced collections
    under their namespace's path)."""

    def __init__(
        self, http: aiohttp.ClientSession, etcd: Etcd, collection: str, kind: str, group: str = ""
    ) -> None:
        self._http, self._etcd = http, etcd
        self._collection, self._kind, self._group = collection, kind, group

    async def run(self, case: Case) -> None:
        name = case.body["metadata"]["name"]
        if case.update is None and case.causes:
            status = await refused(
                self._http, self._etcd, "POST", self._collection, **as_json(case.body)
            )
            self._check_invalid(status, name, case.causes)
            return
        created = await self._write("POST", self._collection, case.body, 201)
        try:
            if case.update is not None:
                changed = copy.deepcopy(created)
                case.update(changed)
                if case.causes:
                    status = await refused(
                        self._http, self._etcd, "PUT", self._item(name), **as_json(changed)
                    )
                    self._check_invalid(status, name, case.causes)
                    assert await self._get(name) == created, "a refused update changed it"
                else:
                    await self._write("PUT", self._item(name), changed, 200)
            stored = await self._get(name)
            for path, value in case.expect.items():
                assert lookup(stored, path) == value, (path, lookup(stored, path), value)
        finally:
            await self._delete(name)

    def _item(self, name: str) -> str:
        return f"{self._collection}/{name}"

    def _check_invalid(self, status: Obj, name: str, causes: tuple[Cause, ...]) -> None:
        assert (status["code"], status["reason"]) == (422, "Invalid"), status
        details = status["details"]
        assert (details["kind"], details["name"]) == (self._kind, name), details
        if self._group:
            assert details["group"] == self._group
        got = [(c["reason"], c["field"], c["message"]) for c in details["causes"]]
        assert sorted(got) == sorted(causes), got

    async def _write(self, method: str, path: str, body: Obj, code: int) -> Obj:
        async with self._http.request(method, path, **as_json(body)) as response:
            answer: Obj = orjson.loads(await response.read())
            assert response.status == code, answer
        return answer

    async def _get(self, name: str) -> Obj:
        async with self._http.get(self._item(name)) as response:
            body: Obj = orjson.loads(await response.read())
            assert response.status == 200, body
        return body

    async def _clear_finalizers(self, name: str, current: Obj) -> None:
        """Clear current's finalizers, unless a controller clearing its own (a
        CRD's cleanup) got there first: then the object is gone, or changed."""
        while current.get("metadata", {}).get("finalizers"):
            current["metadata"]["finalizers"] = []
            async with self._http.put(self._item(name), **as_json(current)) as response:
                if response.status in (200, 404):
                    return
                assert response.status == 409, await response.read()
            async with self._http.get(self._item(name)) as response:
                if response.status == 404:
                    return
                current = orjson.loads(await response.read())

    async def _delete(self, name: str) -> None:
        async with self._http.delete(self._item(name)) as response:
            answer: Obj = orjson.loads(await response.read())
            assert response.status == 200, answer
        if answer.get("metadata", {}).get("finalizers"):
            # Only marked for deletion: it goes once its finalizers are cleared.
            await self._clear_finalizers(name, answer)
        async with self._http.get(self._item(name)) as response:
            lingering = response.status != 404
        if lingering:
            # Only a namespace lingers: it goes once the lifecycle controller emptied it.
            assert answer.get("status", {}).get("phase") == "Terminating", answer
            await gone(self._http, self._item(name))
