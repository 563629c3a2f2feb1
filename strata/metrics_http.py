"""What strata's Prometheus metrics share: the metrics port every service may
open (Prometheus text at /metrics for one prometheus-client registry, on its own
small aiohttp server), and kube's latency buckets."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

# kube's buckets for apiserver_request_duration_seconds and etcd_request_duration_seconds.
LATENCY_BUCKETS = (
    0.005,
    0.025,
    0.05,
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    1.25,
    1.5,
    2,
    3,
    4,
    5,
    6,
    8,
    10,
    15,
    20,
    30,
    45,
    60,
)


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
