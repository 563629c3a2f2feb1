"""What an API server serves, asked once and kept: group-versions and their
resources from /api and /apis, and the mapping kubectl makes from what a user
types (a plural, singular or short name, a kind, "deployments.apps",
"deploy.v1.apps") to one resource. The cache lasts until invalidate() or its
time to live (a CRD added since is then found)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from strata.client._dynamic import Resource
from strata.client._errors import NotFound
from strata.client._rest import RestClient


@dataclass(frozen=True, kw_only=True)
class APIResource:
    """One resource as discovery lists it."""

    resource: Resource
    singular: str
    short_names: tuple[str, ...]
    verbs: tuple[str, ...]
    categories: tuple[str, ...]
    subresources: tuple[str, ...]
    preferred: bool


class DiscoveryClient:
    """Discovery with a cache (see the module docstring)."""

    def __init__(self, rest: RestClient, *, ttl_seconds: float = 600.0) -> None:
        self.rest = rest
        self.ttl_seconds = ttl_seconds
        self._resources: list[APIResource] | None = None
        self._fetched = 0.0
        self._lock = asyncio.Lock()

    def invalidate(self) -> None:
        self._resources = None

    async def _group_versions(self) -> list[tuple[str, str, bool]]:
        """(group, version, preferred) for everything served."""
        found: list[tuple[str, str, bool]] = []
        core = await self.rest.request("GET", "/api")
        versions = list(core.get("versions") or ())
        found += [("", v, i == 0) for i, v in enumerate(versions)]
        groups = await self.rest.request("GET", "/apis")
        for group in groups.get("groups") or ():
            preferred = (group.get("preferredVersion") or {}).get("version", "")
            for version in group.get("versions") or ():
                found.append((group["name"], version["version"], version["version"] == preferred))
        return found

    async def _list(self, group: str, version: str, preferred: bool) -> list[APIResource]:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            listing = await self.rest.request("GET", path)
        except NotFound:  # went away between the two requests
            return []
        entries = listing.get("resources") or ()
        subresources: dict[str, list[str]] = {}
        for entry in entries:
            parent, _, sub = str(entry.get("name", "")).partition("/")
            if sub:
                subresources.setdefault(parent, []).append(sub)
        return [
            APIResource(
                resource=Resource(
                    group=group,
                    version=version,
                    resource=entry["name"],
                    namespaced=bool(entry.get("namespaced")),
                    kind=str(entry.get("kind", "")),
                ),
                singular=str(entry.get("singularName") or "").lower()
                or str(entry.get("kind", "")).lower(),
                short_names=tuple(entry.get("shortNames") or ()),
                verbs=tuple(entry.get("verbs") or ()),
                categories=tuple(entry.get("categories") or ()),
                subresources=tuple(subresources.get(entry["name"], ())),
                preferred=preferred,
            )
            for entry in entries
            if "/" not in str(entry.get("name", ""))
        ]

    async def resources(self) -> list[APIResource]:
        """Every resource served (preferred versions first within a group)."""
        async with self._lock:
            stale = time.monotonic() - self._fetched > self.ttl_seconds
            if self._resources is None or stale:
                listed = await asyncio.gather(
                    *(self._list(g, v, p) for g, v, p in await self._group_versions())
                )
                ordered = [r for group in listed for r in group]
                ordered.sort(key=lambda r: not r.preferred)
                self._resources = ordered
                self._fetched = time.monotonic()
            return list(self._resources)

    async def resolve(self, name: str) -> Resource:
        """The resource a user means by name, as kubectl resolves it (see the
        module docstring); NotFound when nothing matches, even after a refresh."""
        for attempt in range(2):
            found = self._match(await self.resources(), name)
            if found is not None:
                return found
            if attempt == 0:
                self.invalidate()
        raise NotFound(
            code=404,
            reason="NotFound",
            message=f'the server doesn\'t have a resource type "{name}"',
        )

    @staticmethod
    def _match(resources: list[APIResource], name: str) -> Resource | None:
        wanted, _, qualifier = name.lower().partition(".")
        version, group = "", qualifier
        if qualifier:
            first, _, rest = qualifier.partition(".")
            if any(r.resource.version == first and r.resource.group == rest for r in resources):
                version, group = first, rest
        for r in resources:
            if qualifier and (
                r.resource.group != group or (version and r.resource.version != version)
            ):
                continue
            names = {r.resource.resource, r.singular, r.resource.kind.lower(), *r.short_names}
            if wanted in names:
                return r.resource
        return None
