"""The metrics port every strata service may open: Prometheus text at /metrics
for one prometheus-client registry, on its own small aiohttp server."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


async def serve_metrics(listen: str, registry: CollectorRegistry) -> web.AppRunner:
    """Serve registry at http://listen/metrics until the returned runner is cleaned up."""

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    host, _, port = listen.rpartition(":")
    await web.TCPSite(runner, host, int(port)).start()
    return runner
