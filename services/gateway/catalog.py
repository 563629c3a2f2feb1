"""The gateway's view of what the registry serves, at most REFRESH_SECONDS old
when a request is routed by it, and the discovery documents (/api, /apis,
/api/v1, ...) built from it.

Under steady traffic no request waits for the list: one that finds it past
REFRESH_AHEAD of its age limit is answered from it while a fresh one is
fetched behind it, so the next finds that one."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import time
from collections.abc import Callable, Iterable
from typing import Any

import grpc

from strata import telemetry
from strata.api.wire import status_from_rpc_error
from strata.proto.registry.v1 import registry_pb2, registry_pb2_grpc

# How old the list requests are routed by may be (one not in it is asked for).
REFRESH_SECONDS = 0.25
# Discovery answers from a list this fresh: a client that has seen a CRD
# Established discovers its resources at once (kubectl wait, then apply).
DISCOVERY_SECONDS = 0.0
# The part of its age limit after which a list in use is fetched again ahead.
REFRESH_AHEAD = 0.6

log = telemetry.get_logger("strata.gateway.catalog")
APIResource = registry_pb2.APIResource


def storage_version_hash(group: str, version: str, kind: str) -> str:
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _subresource_entries(r: APIResource) -> list[dict[str, Any]]:
    """Discovery's "<resource>/<subresource>" entries (a scale names its own kind)."""
    verbs = [v for v in ("get", "patch", "update") if v in r.verbs]
    entries: list[dict[str, Any]] = []
    for subresource in r.subresources:
        entry: dict[str, Any] = {
            "name": f"{r.name}/{subresource}",
            "singularName": "",
            "namespaced": r.namespaced,
            "kind": r.kind,
            # A namespace's finalize is written, never read (as kube's).
            "verbs": ["update"] if subresource == "finalize" else verbs,
        }
        if subresource == "scale":
            entry.update(group="autoscaling", version="v1", kind="Scale")
        if subresource == "token":  # a ServiceAccount's TokenRequest, created only
            entry.update(group="authentication.k8s.io", version="v1", kind="TokenRequest")
            entry["verbs"] = ["create"]
        entries.append(entry)
    return entries


class Catalog:
    def __init__(
        self,
        registry: registry_pb2_grpc.RegistryAsyncStub,
        clock: Callable[[], float] = time.monotonic,
        served_here: Iterable[APIResource] = (),
    ) -> None:
        self._registry = registry
        self._clock = clock
        # What the gateway serves itself (the review APIs): in discovery only,
        # never routed to the registry, and stored nowhere (no storage hash).
        self._here = {(r.group, r.version, r.name): r for r in served_here}
        self._resources: dict[tuple[str, str, str], APIResource] = {}
        # When the list in use was asked for: its age counts from then.
        self._fetched = float("-inf")
        self._ahead: asyncio.Task[None] | None = None

    async def resources(
        self, max_age: float = REFRESH_SECONDS
    ) -> dict[tuple[str, str, str], APIResource]:
        """The list, at most max_age old (fetched now if it is older)."""
        age = self._clock() - self._fetched
        if age > max_age:
            await self._fetch()
        elif age > max_age * REFRESH_AHEAD and (self._ahead is None or self._ahead.done()):
            self._ahead = asyncio.create_task(self._fetch_ahead())
        return self._resources

    async def _fetch(self) -> None:
        asked = self._clock()
        response = await self._registry.ListResources(registry_pb2.ListResourcesRequest())
        # A fetch asked for before the list in use was (one ahead that took
        # longer than a request's own) is older than it.
        if asked > self._fetched:
            self._resources = {(r.group, r.version, r.name): r for r in response.resources}
            self._fetched = asked

    async def _fetch_ahead(self) -> None:
        try:
            await self._fetch()
        except grpc.aio.AioRpcError as e:
            # The request that finds the list too old fetches it itself.
            log.info("resource list not fetched ahead", error=e.details() or e.code().name)

    async def lookup(self, group: str, version: str, resource: str) -> APIResource | None:
        """What serves a resource; one the list does not know yet is asked for."""
        key = (group, version, resource)
        found = (await self.resources()).get(key)
        if found is not None:
            return found
        ref = registry_pb2.ResourceRef(group=group, version=version, resource=resource)
        try:
            found = await self._registry.GetResource(ref)
        except grpc.aio.AioRpcError as e:
            if status_from_rpc_error(e).reason == "NotFound":
                return None
            raise
        self._resources[key] = found
        return found

    async def discoverable(self) -> dict[tuple[str, str, str], APIResource]:
        """What discovery and OpenAPI describe: the registry's resources and the
        gateway's own."""
        return {**await self.resources(DISCOVERY_SECONDS), **self._here}

    async def group_versions(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for group, version, _ in await self.discoverable():
            versions = groups.setdefault(group, [])
            if version not in versions:
                versions.append(version)
        return groups

    async def api_versions(self, server_address: str) -> dict[str, Any]:
        return {
            "kind": "APIVersions",
            "versions": (await self.group_versions()).get("", ["v1"]),
            "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
            ],
        }

    async def api_group_list(self) -> dict[str, Any]:
        groups = []
        for group, versions in sorted((await self.group_versions()).items()):
            if not group:
                continue
            entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
            groups.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    async def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        known = await self.discoverable()
        selected = [r for (g, v, _), r in sorted(known.items()) if (g, v) == (group, version)]
        if not selected:
            return None
        resources = []
        for r in selected:
            entry: dict[str, Any] = {
                "name": r.name,
                "singularName": r.singular_name,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(r.verbs),
            }
            if (group, version, r.name) not in self._here:
                entry["storageVersionHash"] = storage_version_hash(group, version, r.kind)
            if r.short_names:
                entry["shortNames"] = list(r.short_names)
            if r.categories:
                entry["categories"] = list(r.categories)
            resources.append(entry)
            resources.extend(_subresource_entries(r))
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }

    async def aggregated(self, legacy: bool, version: str = "v2") -> dict[str, Any]:
        """Aggregated discovery (apidiscovery.k8s.io): every resource of the
        core group (legacy, for /api) or of every other group (/apis) in one
        APIGroupDiscoveryList, as kubectl asks for first."""
        groups: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for (group, gv, _), r in sorted((await self.discoverable()).items()):
            if (group == "") != legacy:
                continue
            groups.setdefault(group, {}).setdefault(gv, []).append(_discovered(r))
        items = [
            {
                "metadata": {"name": group} if group else {},
                "versions": [
                    {"version": v, "resources": resources, "freshness": "Current"}
                    for v, resources in versions.items()
                ],
            }
            for group, versions in groups.items()
        ]
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": f"apidiscovery.k8s.io/{version}",
            "metadata": {},
            "items": items,
        }


def _discovered(r: APIResource) -> dict[str, Any]:
    """One resource as aggregated discovery describes it."""
    entry: dict[str, Any] = {
        "resource": r.name,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular_name,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    subresources = []
    for sub in _subresource_entries(r):
        kind = {"group": sub.get("group", r.group), "version": sub.get("version", r.version)}
        subresources.append(
            {
                "subresource": sub["name"].split("/", 1)[1],
                "responseKind": {**kind, "kind": sub["kind"]},
                "verbs": sub["verbs"],
            }
        )
    if subresources:
        entry["subresources"] = subresources
    return entry
