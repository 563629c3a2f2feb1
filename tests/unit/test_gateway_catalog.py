"""The gateway's resource list: never older than its limit when a request is
routed by it, fetched ahead while still young enough to use, so that under
steady traffic no request waits for it, and never replaced by an older one."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from services.gateway.catalog import REFRESH_AHEAD, REFRESH_SECONDS, Catalog
from strata.proto.registry.v1 import registry_pb2, registry_pb2_grpc


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Registry:
    """ListResources answering the resources it is set to, each call held until
    released when hold is set."""

    def __init__(self) -> None:
        self.names = ["configmaps"]
        self.asked = 0
        self.hold = False
        self.releases: list[asyncio.Event] = []

    async def ListResources(self, _: Any) -> registry_pb2.ListResourcesResponse:
        self.asked += 1
        answer = registry_pb2.ListResourcesResponse(
            resources=[
                registry_pb2.APIResource(group="", version="v1", name=name) for name in self.names
            ]
        )
        if self.hold:
            release = asyncio.Event()
            self.releases.append(release)
            await release.wait()
        return answer


def catalog_of(registry: Registry, clock: Clock) -> Catalog:
    return Catalog(cast("registry_pb2_grpc.RegistryAsyncStub", registry), clock)


def names(listed: dict[tuple[str, str, str], Any]) -> list[str]:
    return sorted(name for _, _, name in listed)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_young_list_is_used_as_it_is() -> None:
    registry, clock = Registry(), Clock()
    catalog = catalog_of(registry, clock)
    assert names(await catalog.resources()) == ["configmaps"]
    registry.names = ["configmaps", "secrets"]
    clock.now += REFRESH_SECONDS * REFRESH_AHEAD * 0.9
    assert names(await catalog.resources()) == ["configmaps"]
    await settle()
    assert registry.asked == 1


async def test_a_list_near_its_limit_is_used_while_the_next_is_fetched() -> None:
    registry, clock = Registry(), Clock()
    catalog = catalog_of(registry, clock)
    await catalog.resources()
    registry.names, registry.hold = ["configmaps", "secrets"], True
    clock.now += REFRESH_SECONDS * (1 + REFRESH_AHEAD) / 2
    # Answered at once from the list in use, though the fetch is held.
    assert names(await catalog.resources()) == ["configmaps"]
    await settle()
    assert registry.asked == 2
    # A request meanwhile starts no second fetch ahead.
    assert names(await catalog.resources()) == ["configmaps"]
    await settle()
    assert registry.asked == 2
    registry.releases[0].set()
    await settle()
    assert names(await catalog.resources()) == ["configmaps", "secrets"]


async def test_a_list_past_its_limit_is_fetched_before_the_answer() -> None:
    registry, clock = Registry(), Clock()
    catalog = catalog_of(registry, clock)
    await catalog.resources()
    registry.names = ["configmaps", "secrets"]
    clock.now += REFRESH_SECONDS * 1.01
    assert names(await catalog.resources()) == ["configmaps", "secrets"]
    # Discovery wants a list asked for after it came.
    registry.names = ["configmaps", "secrets", "services"]
    clock.now += 0.001
    assert names(await catalog.resources(0.0)) == ["configmaps", "secrets", "services"]


async def test_a_fetch_ahead_that_ends_late_does_not_replace_a_newer_list() -> None:
    registry, clock = Registry(), Clock()
    catalog = catalog_of(registry, clock)
    await catalog.resources()
    registry.hold = True
    clock.now += REFRESH_SECONDS * (1 + REFRESH_AHEAD) / 2
    await catalog.resources()  # the fetch ahead, held with the old names
    await settle()
    registry.hold = False
    registry.names = ["configmaps", "secrets"]
    clock.now += 1
    assert names(await catalog.resources(0.0)) == ["configmaps", "secrets"]
    registry.releases[0].set()  # the older fetch ends last
    await settle()
    assert names(await catalog.resources(10.0)) == ["configmaps", "secrets"]
