"""The kubectl flows of the gateway's end-to-end suite through strata's own
REST client: tables and YAML by Accept, field selectors, server-side dry runs,
the scale subresource, apply that creates, configures and leaves unchanged (an
update that changes nothing keeps its resourceVersion), and waiting for a
condition by watching."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import yaml

from strata.client import DynamicClient, NotFound, Resource, RestClient, load_config
from strata.dev import System
from tests.integration.test_crds import crd, established, unique_group
from tests.support.registry_tester import gone

CONFIGMAPS = Resource(version="v1", resource="configmaps")
DEPLOYMENTS = Resource(group="apps", version="v1", resource="deployments")
NAMESPACES = Resource(version="v1", resource="namespaces", namespaced=False)
CRDS = Resource(
    group="apiextensions.k8s.io",
    version="v1",
    resource="customresourcedefinitions",
    namespaced=False,
)
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


@pytest.fixture(scope="module")
async def rest(system: System) -> AsyncIterator[RestClient]:
    async with RestClient(load_config(system.kubeconfig)) as client:
        yield client


async def test_the_kubectl_flows(rest: RestClient, http: aiohttp.ClientSession) -> None:
    dynamic = DynamicClient(rest)
    ns = f"flows-{uuid.uuid4().hex[:6]}"
    await dynamic.resource(NAMESPACES).create({"metadata": {"name": ns}})
    cms = dynamic.resource(CONFIGMAPS)
    body: dict[str, Any] = {"metadata": {"name": "app", "labels": {"tier": "web"}}}

    # apply: creates, configures, and leaves an unchanged object as it was (the
    # manager's entry, its time included, too).
    config = {**body, "apiVersion": "v1", "kind": "ConfigMap"}
    created = await cms.apply(config, ns, field_manager="flows")
    await asyncio.sleep(1.1)  # a new entry would carry a later time (seconds)
    again = await cms.apply(config, ns, field_manager="flows")
    assert again["metadata"]["managedFields"] == created["metadata"]["managedFields"]
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    configured = await cms.apply(
        {**body, "apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}},
        ns,
        field_manager="flows",
    )
    assert configured["data"] == {"k": "v"}
    # An update that changes nothing writes nothing, as in kube.
    same = await cms.update(configured, ns)
    assert same["metadata"]["resourceVersion"] == configured["metadata"]["resourceVersion"]

    # get as a table and as YAML, as kubectl asks for them.
    table = await rest.request("GET", CONFIGMAPS.path(ns), accept=TABLE)
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:1] == ["Name"]
    assert table["rows"][0]["cells"][0] == "app"
    as_yaml = await rest.request_bytes("GET", CONFIGMAPS.path(ns, "app"), accept="application/yaml")
    assert yaml.safe_load(as_yaml)["data"] == {"k": "v"}

    # a field selector, and a dry run that stores nothing.
    picked = await cms.list(ns, field_selector="metadata.name=app")
    assert [i["metadata"]["name"] for i in picked["items"]] == ["app"]
    await cms.create({"metadata": {"name": "dry"}}, ns, dry_run=True)
    with pytest.raises(NotFound):
        await cms.get("dry", ns)
    await cms.delete("app", ns, dry_run=True)
    assert (await cms.get("app", ns))["data"] == {"k": "v"}

    # scale through the subresource.
    deployments = dynamic.resource(DEPLOYMENTS)
    labels = {"app": "web"}
    await deployments.create(
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "web", "image": "nginx"}]},
                },
            },
        },
        ns,
    )
    scale = await deployments.get("web", ns, subresource="scale")
    assert (scale["kind"], scale["spec"]["replicas"]) == ("Scale", 1)
    await deployments.patch("web", {"spec": {"replicas": 4}}, ns, subresource="scale")
    assert (await deployments.get("web", ns))["spec"]["replicas"] == 4

    # wait --for=condition=Established, by watching the CRD.
    group = unique_group()
    definition = crd("gizmos", group, "Gizmo")
    crds = dynamic.resource(CRDS)
    start = (await crds.list())["metadata"]["resourceVersion"]
    await crds.create(definition)
    seen_established = False
    async for event in crds.watch(resource_version=start, timeout_seconds=20):
        if event.object["metadata"]["name"] == f"gizmos.{group}" and established(event.object):
            seen_established = True
            break
    assert seen_established
    # Deleted, and waited for: its cleanup writes must not land in a later test.
    await crds.delete(f"gizmos.{group}")
    await gone(http, CRDS.path(name=f"gizmos.{group}"))
