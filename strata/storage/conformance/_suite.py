"""What a conformance case is given, and the helpers cases share."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from strata.proto.storage.v1 import storage_pb2
from strata.storage._interface import ListOptions, Storage

T = TypeVar("T")
Event = storage_pb2.WatchEvent


@dataclass(frozen=True, kw_only=True)
class Capabilities:
    """Where implementations legitimately differ."""

    # A watch from a compacted revision fails with Expired (a cache may still
    # hold that history in its window and replay it instead, as kube's does).
    watch_expires_on_compaction: bool = True
    # A watch from before the implementation's event window fails with Expired,
    # "too old resource version: N (OLDEST)", even while etcd keeps that history
    # (a watch cache, as kube's); storage replays any revision not compacted.
    expires_before_window: bool = False
    # BOOKMARK events arrive while a watch with progress_notify is idle.
    progress_notify: bool = True
    # request_progress brings such a BOOKMARK at once (a cache catches up itself,
    # and its own watchers get theirs on its bookmark timer, as in kube).
    progress_on_request: bool = True


@dataclass(frozen=True, kw_only=True)
class Hooks:
    """Out-of-band access to the store behind the implementation."""

    compact: Callable[[int], Awaitable[None]]
    current_revision: Callable[[], Awaitable[int]]


class MissingCapability(Exception):
    """The implementation cannot run this case; the message names what it lacks."""


@dataclass
class Suite:
    storage: Storage
    capabilities: Capabilities
    hooks: Hooks
    name: str = "implementation"

    def require(self, capability: str) -> None:
        if not getattr(self.capabilities, capability):
            raise MissingCapability(f"{self.name} does not have {capability}")

    @staticmethod
    def prefix() -> str:
        """A resource prefix no other case uses."""
        return f"/conformance{uuid.uuid4().hex[:10]}/"

    async def resource(self) -> str:
        """A prefix no other case uses, that the implementation serves watches of
        from now on: a watch cache starts on its resource's first request (kube's
        when the apiserver starts) and answers 410 for anything older."""
        root = self.prefix()
        await self.storage.list(root, ListOptions())
        return root


def obj(
    name: str,
    namespace: str = "ns",
    labels: dict[str, str] | None = None,
    meta: dict[str, Any] | None = None,
    **data: str,
) -> bytes:
    """A small object's JSON; meta: more metadata fields."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if labels:
        metadata["labels"] = labels
    metadata.update(meta or {})
    return orjson.dumps({"apiVersion": "v1", "kind": "Thing", "metadata": metadata, "data": data})


def data(stored: storage_pb2.Object) -> dict[str, str]:
    body: dict[str, str] = orjson.loads(stored.value)["data"]
    return body


async def events(
    source: AsyncGenerator[Event, None], count: int, within: float = 10
) -> list[Event]:
    """The next count events (bookmarks excluded), or AssertionError after within seconds."""
    got: list[Event] = []
    try:
        async with asyncio.timeout(within):
            while len(got) < count:
                event = await anext(source)
                if event.type != Event.BOOKMARK:
                    got.append(event)
    except TimeoutError:
        raise AssertionError(f"expected {count} events, got {len(got)}: {got}") from None
    return got


async def quiet(source: AsyncGenerator[Event, None], seconds: float = 0.5) -> None:
    """Assert nothing but bookmarks arrives for a while."""
    try:
        async with asyncio.timeout(seconds):
            while True:
                event = await anext(source)
                assert event.type == Event.BOOKMARK, f"unexpected event {event}"
    except TimeoutError:
        return


async def raises(error: type[Exception], call: Awaitable[Any]) -> Exception:
    try:
        await call
    except error as e:
        return e
    raise AssertionError(f"expected {error.__name__}")


async def eventually(check: Callable[[], Awaitable[T]], within: float = 10) -> T:
    """check's result once it stops raising AssertionError (a cache catching up)."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        try:
            return await check()
        except AssertionError:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.02)
