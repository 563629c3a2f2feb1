"""The official `kubernetes` Python client against strata, from its kubeconfig."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from strata.dev import System


@pytest.fixture(scope="module")
def core(system: System) -> Iterator[Any]:
    api_client = config.new_client_from_config(config_file=str(system.kubeconfig))
    yield client.CoreV1Api(api_client)
    api_client.close()


def test_configmap_round_trip_and_watch(core: Any) -> None:
    namespace = f"py-{uuid.uuid4().hex[:6]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    listed = core.list_namespaced_config_map(namespace)
    events: list[tuple[str, str, str]] = []
    started = threading.Event()

    def watch_configmaps() -> None:
        w = watch.Watch()
        started.set()
        for event in w.stream(
            core.list_namespaced_config_map,
            namespace,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=20,
        ):
            obj = event["object"]
            events.append((event["type"], obj.metadata.name, (obj.data or {}).get("k", "")))
            if event["type"] == "DELETED":
                w.stop()

    watcher = threading.Thread(target=watch_configmaps)
    watcher.start()
    started.wait()

    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cfg"), data={"k": "v1"})
    created = core.create_namespaced_config_map(namespace, body)
    assert created.metadata.uid and created.metadata.resource_version
    read = core.read_namespaced_config_map("cfg", namespace)
    assert read.data == {"k": "v1"}
    read.data = {"k": "v2"}
    replaced = core.replace_namespaced_config_map("cfg", namespace, read)
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)
    assert [c.metadata.name for c in core.list_namespaced_config_map(namespace).items] == ["cfg"]
    core.delete_namespaced_config_map("cfg", namespace)
    watcher.join(30)
    assert events == [("ADDED", "cfg", "v1"), ("MODIFIED", "cfg", "v2"), ("DELETED", "cfg", "v2")]

    with pytest.raises(ApiException) as raised:
        core.read_namespaced_config_map("cfg", namespace)
    assert raised.value.status == 404


def test_errors_arrive_as_status(core: Any) -> None:
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Not_Valid"))
        )
    assert raised.value.status == 422
    assert '"reason":"Invalid"' in (raised.value.body or "").replace(" ", "")


def test_secrets_and_delete_collection(core: Any) -> None:
    namespace = f"py-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    for name, team in (("one", "a"), ("two", "a"), ("three", "b")):
        secret = client.V1Secret(
            metadata=client.V1ObjectMeta(name=name, labels={"team": team}),
            string_data={"token": name},
        )
        core.create_namespaced_secret(namespace, secret)
    read = core.read_namespaced_secret("one", namespace)
    assert read.type == "Opaque" and read.data == {"token": "b25l"}  # base64 of "one"
    core.delete_collection_namespaced_secret(namespace, label_selector="team=a")
    left = core.list_namespaced_secret(namespace)
    assert [s.metadata.name for s in left.items] == ["three"]
