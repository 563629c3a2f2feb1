"""One request with a client-chosen traceparent yields spans with that trace id
from all four services and a span for the etcd call, received over OTLP."""

from __future__ import annotations

import asyncio
import secrets

import aiohttp

from strata.dev import OtlpReceiver, ReceivedSpan

SERVICES = {"strata-gateway", "strata-registry", "strata-cacher", "strata-storage"}


def _complete(spans: list[ReceivedSpan]) -> bool:
    """Every service and an etcd call are there, and every parent has arrived too
    (spans are exported as they end, children before their parents)."""
    services = {s.service for s in spans}
    ids = {s.span_id for s in spans}
    orphans = [s for s in spans if s.parent_span_id not in ids and s.service != "strata-gateway"]
    return services >= SERVICES and any(s.name.startswith("etcd ") for s in spans) and not orphans


async def test_create_is_one_trace_across_every_service(
    http: aiohttp.ClientSession, otlp: OtlpReceiver
) -> None:
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"traced-{secrets.token_hex(3)}"},
        "data": {"k": "v"},
    }
    async with http.post(
        "/api/v1/namespaces/default/configmaps",
        json=body,
        headers={"traceparent": f"00-{trace_id}-{parent_id}-01"},
    ) as response:
        assert response.status == 201, await response.text()

    spans = await asyncio.to_thread(otlp.wait_for, trace_id, _complete)
    assert {s.service for s in spans} >= SERVICES, spans
    etcd_spans = [s for s in spans if s.name.startswith("etcd ")]
    assert etcd_spans and all(s.service == "strata-storage" for s in etcd_spans)
    assert "etcd Txn" in {s.name for s in etcd_spans}
    # The gateway's server span continues the caller's span.
    gateway_roots = [s for s in spans if s.service == "strata-gateway" and s.parent_span_id]
    assert parent_id in {s.parent_span_id for s in gateway_roots}
    # Every span but the gateway's root has its parent inside this trace.
    ids = {s.span_id for s in spans} | {parent_id}
    assert all(s.parent_span_id in ids for s in spans), [
        s for s in spans if s.parent_span_id not in ids
    ]


async def test_unsampled_traceparent_is_not_exported(
    http: aiohttp.ClientSession, otlp: OtlpReceiver
) -> None:
    trace_id, parent_id = secrets.token_hex(16), secrets.token_hex(8)
    async with http.get(
        "/api/v1/namespaces", headers={"traceparent": f"00-{trace_id}-{parent_id}-00"}
    ) as response:
        assert response.status == 200
    # A sampled request after it flushes the same exporters; by then nothing
    # from the unsampled trace has arrived.
    marker = secrets.token_hex(16)
    async with http.get(
        "/api/v1/namespaces", headers={"traceparent": f"00-{marker}-{parent_id}-01"}
    ) as response:
        assert response.status == 200
    assert await asyncio.to_thread(otlp.wait_for, marker, bool)
    assert not otlp.spans(trace_id)
