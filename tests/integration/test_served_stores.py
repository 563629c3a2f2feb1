"""The registry's custom Stores follow the CRDs through an informer over the
Registry API once it has synced: a CRD defined or removed afterwards is served
or not without another list of CRDs from storage (the list from the cache
stands in only until the informer has synced)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest

from services.registry.served import ServedStores
from strata.api.errors import StatusError
from strata.dev import System
from strata.storage import GrpcStorage, ListOptions, ListResult
from tests.integration.test_crds import crd, define, undefine, unique_group


class CountingStorage(GrpcStorage):
    """The cacher's storage, counting the lists of CRDs."""

    crd_lists = 0

    async def list(self, prefix: str, opts: ListOptions = ListOptions()) -> ListResult:
        if "customresourcedefinitions" in prefix:
            self.crd_lists += 1
        return await super().list(prefix, opts)


async def eventually(check: Any, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        assert time.monotonic() < deadline, "the condition did not hold in time"
        await asyncio.sleep(0.05)


async def test_custom_stores_follow_the_crd_informer(
    http: aiohttp.ClientSession, system: System
) -> None:
    assert system.endpoints is not None
    async with (
        system.grpc_channel("cacher", "registry") as cacher,
        system.grpc_channel("registry", "registry") as registry,
    ):
        storage = CountingStorage(cacher)
        served = ServedStores([], storage)
        informer = served.follow_crds(registry)
        informer.start()
        try:
            assert await informer.wait_for_cache_sync(30)
            await served.every()
            lists_after_sync = storage.crd_lists
            group = unique_group()
            body = crd("gadgets", group, "Gadget")
            await define(http, body)

            async def known() -> bool:
                return any(s.resource.group == group for s in await served.every())

            await eventually(known)
            await served.lookup(group, "v1", "gadgets")
            await undefine(http, body["metadata"]["name"])

            async def gone() -> bool:
                return not await known()

            await eventually(gone)
            with pytest.raises(StatusError):
                await served.lookup(group, "v1", "gadgets")
            # Only the live read of the lookup that missed touched storage for CRDs.
            assert storage.crd_lists == lists_after_sync
        finally:
            await informer.stop()
            await storage.close()
