"""Discovery: /api and /apis (aggregated, when the client asks for that first),
a group's APIGroup at /apis/<group> and a group version's APIResourceList, all
from the gateway's copy of the registry's catalog; and kube's 404 for a path
nothing serves."""

from __future__ import annotations

import orjson
from aiohttp import web

from services.gateway import negotiation, paths
from services.gateway.catalog import Catalog
from services.gateway.output import text_not_found
from services.gateway.responses import json_response
from strata.api import errors


class Discovery:
    def __init__(self, catalog: Catalog, server_address: str) -> None:
        self._catalog = catalog
        self._server_address = server_address

    async def api(self, request: web.Request) -> web.Response:
        """/api: the core group's versions."""
        aggregated = await self._aggregated(request, legacy=True)
        if aggregated is not None:
            return aggregated
        return json_response(orjson.dumps(await self._catalog.api_versions(self._server_address)))

    async def apis(self, request: web.Request) -> web.Response:
        """/apis: every other group."""
        aggregated = await self._aggregated(request, legacy=False)
        if aggregated is not None:
            return aggregated
        return json_response(orjson.dumps(await self._catalog.api_group_list()))

    async def _aggregated(self, request: web.Request, legacy: bool) -> web.Response | None:
        """The aggregated document, when the client asks for it first."""
        version = negotiation.aggregated_discovery(request.headers.get("Accept", ""))
        if not version:
            return None
        body = orjson.dumps(await self._catalog.aggregated(legacy, version))
        response = web.Response(body=body)
        response.headers["Content-Type"] = negotiation.AGGREGATED.format(version)
        return response

    async def group_or_version(self, request: web.Request, info: paths.RequestInfo) -> web.Response:
        """/apis/<group> (its APIGroup) or /api/<v>, /apis/<group>/<v> (its resources)."""
        if request.method != "GET":
            raise errors.method_not_allowed()
        if not info.version:  # /apis/<group>: the group's APIGroup
            groups = (await self._catalog.api_group_list())["groups"]
            group = next((g for g in groups if g["name"] == info.group), None)
            if group is None:
                return await self.nothing_at(request)
            return json_response(orjson.dumps({"kind": "APIGroup", "apiVersion": "v1", **group}))
        body = await self._catalog.resource_list(info.group, info.version)
        if body is None:
            return await self.nothing_at(request)
        return json_response(orjson.dumps(body))

    async def nothing_at(self, request: web.Request) -> web.Response:
        """kube's 404 for a path nothing serves: a Status under /api and the
        groups it serves, Go's plain text under a group it does not."""
        if paths.json_prefixed(request.path, await self._catalog.group_versions()):
            raise errors.path_not_found()
        return text_not_found()
