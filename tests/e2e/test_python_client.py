"""The official `kubernetes` Python client against strata, from its kubeconfig."""

from __future__ import annotations

import threading
import time
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


@pytest.fixture(scope="module")
def apps(system: System) -> Iterator[Any]:
    api_client = config.new_client_from_config(config_file=str(system.kubeconfig))
    yield client.AppsV1Api(api_client)
    api_client.close()


def _deployment(generate_name: str, replicas: int) -> Any:
    labels = {"app": generate_name.rstrip("-")}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(generate_name=generate_name, labels=labels),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="a", image="nginx")]),
            ),
        ),
    )


def test_deployments_generation_status_and_scale(core: Any, apps: Any) -> None:
    namespace = f"py-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    created = apps.create_namespaced_deployment(namespace, _deployment("web-", 2))
    name = created.metadata.name
    assert name.startswith("web-") and len(name) == len("web-") + 5
    assert created.metadata.generation == 1

    created.spec.template.spec.containers[0].image = "nginx:2"
    updated = apps.replace_namespaced_deployment(name, namespace, created)
    assert updated.metadata.generation == 2

    updated.status = client.V1DeploymentStatus(replicas=2, ready_replicas=1, observed_generation=2)
    with_status = apps.replace_namespaced_deployment_status(name, namespace, updated)
    assert with_status.status.ready_replicas == 1
    assert with_status.metadata.generation == 2

    scale = apps.read_namespaced_deployment_scale(name, namespace)
    assert (scale.spec.replicas, scale.status.replicas) == (2, 2)
    assert scale.status.selector == "app=web"
    scale.spec.replicas = 5
    apps.replace_namespaced_deployment_scale(name, namespace, scale)
    patched = apps.patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": 7}})
    assert patched.spec.replicas == 7
    final = apps.read_namespaced_deployment(name, namespace)
    assert final.spec.replicas == 7 and final.metadata.generation == 4
    assert final.status.ready_replicas == 1

    with pytest.raises(ApiException) as raised:
        apps.patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": -1}})
    assert raised.value.status == 422


def test_pagination_and_selectors(core: Any, apps: Any) -> None:
    namespace = f"py-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    for i in range(7):
        labels = {"parity": "even" if i % 2 == 0 else "odd"}
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"cm-{i}", labels=labels))
        core.create_namespaced_config_map(namespace, body)
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_config_map(namespace, limit=3, _continue=token)
        names += [c.metadata.name for c in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 7 - len(names)
    assert pages == 3 and names == [f"cm-{i}" for i in range(7)]

    odd = core.list_namespaced_config_map(namespace, label_selector="parity=odd")
    assert [c.metadata.name for c in odd.items] == ["cm-1", "cm-3", "cm-5"]
    one = core.list_namespaced_config_map(namespace, field_selector="metadata.name=cm-4")
    assert [c.metadata.name for c in one.items] == ["cm-4"]
    everywhere = core.list_config_map_for_all_namespaces(label_selector="parity=even")
    assert {c.metadata.name for c in everywhere.items if c.metadata.namespace == namespace} == {
        "cm-0",
        "cm-2",
        "cm-4",
        "cm-6",
    }


def _eventually_gone(read: Any, *args: str, within: float = 20) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            read(*args)
        except ApiException as e:
            if e.status == 404:
                return
            raise
        time.sleep(0.2)
    raise AssertionError(f"{args} still there after {within}s")


def test_foreground_deletion_and_garbage_collection(core: Any, apps: Any) -> None:
    namespace = f"py-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    owner = apps.create_namespaced_deployment(namespace, _deployment("owner-", 1))
    reference = client.V1OwnerReference(
        api_version="apps/v1",
        kind="Deployment",
        name=owner.metadata.name,
        uid=owner.metadata.uid,
        block_owner_deletion=True,
        controller=True,
    )
    held = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(
            name="held", owner_references=[reference], finalizers=["example.com/hold"]
        )
    )
    core.create_namespaced_config_map(namespace, held)
    apps.delete_namespaced_deployment(
        owner.metadata.name, namespace, propagation_policy="Foreground"
    )
    # The owner waits, marked, for its blocking dependent, which is being deleted.
    deadline = time.monotonic() + 20
    while not core.read_namespaced_config_map("held", namespace).metadata.deletion_timestamp:
        assert time.monotonic() < deadline, "the dependent was never deleted"
        time.sleep(0.2)
    waiting = apps.read_namespaced_deployment(owner.metadata.name, namespace)
    assert waiting.metadata.finalizers == ["foregroundDeletion"]
    assert waiting.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})
    _eventually_gone(core.read_namespaced_config_map, "held", namespace)
    _eventually_gone(apps.read_namespaced_deployment, owner.metadata.name, namespace)

    with pytest.raises(ApiException) as raised:
        apps.delete_namespaced_deployment("absent", namespace, propagation_policy="Sideways")
    assert raised.value.status == 422
    assert '"kind":"DeleteOptions"' in (raised.value.body or "").replace(" ", "")


def test_namespace_deletion_removes_its_contents(core: Any, apps: Any) -> None:
    namespace = f"py-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    apps.create_namespaced_deployment(namespace, _deployment("web-", 1))
    core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cfg"))
    )
    core.delete_namespace(namespace)
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_config_map(
            namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="late"))
        )
    assert raised.value.status == 403
    assert '"reason":"Forbidden"' in (raised.value.body or "").replace(" ", "")
    _eventually_gone(core.read_namespace, namespace)
    assert not core.list_config_map_for_all_namespaces(
        field_selector=f"metadata.namespace={namespace}"
    ).items


def test_the_dynamic_client(system: System) -> None:
    """kubernetes.dynamic: discovery by apiVersion and kind, then every verb
    (server-side apply with a conflict and force included), a CRD-free kind and
    a subresource."""
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import ConflictError, NotFoundError

    api_client = config.new_client_from_config(config_file=str(system.kubeconfig))
    try:
        dynamic = DynamicClient(api_client)
        namespaces = dynamic.resources.get(api_version="v1", kind="Namespace")
        ns = f"dyn-{uuid.uuid4().hex[:6]}"
        namespaces.create(body={"metadata": {"name": ns}})
        cms = dynamic.resources.get(api_version="v1", kind="ConfigMap")
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}
        created = cms.create(body={**body, "data": {"a": "1"}}, namespace=ns)
        assert created.metadata.namespace == ns
        patched = cms.patch(
            name="d",
            namespace=ns,
            body={"data": {"b": "2"}},
            content_type="application/merge-patch+json",
        )
        assert dict(patched.data) == {"a": "1", "b": "2"}
        listed = cms.get(namespace=ns, label_selector="")
        assert [item.metadata.name for item in listed.items] == ["d"]
        applied = {**body, "data": {"a": "9"}}
        with pytest.raises(ConflictError):
            cms.server_side_apply(body=applied, name="d", namespace=ns, field_manager="robot")
        forced = cms.server_side_apply(
            body=applied, name="d", namespace=ns, field_manager="robot", force_conflicts=True
        )
        assert forced.data.a == "9"
        deployments = dynamic.resources.get(api_version="apps/v1", kind="Deployment")
        labels = {"app": "dyn"}
        deployments.create(
            namespace=ns,
            body={
                "apiVersion": "apps/v1",
                "kind": "Deployment",
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
        )
        scale = deployments.subresources["scale"]
        scale.patch(
            name="web",
            namespace=ns,
            body={"spec": {"replicas": 3}},
            content_type="application/merge-patch+json",
        )
        assert deployments.get(name="web", namespace=ns).spec.replicas == 3
        cms.delete(name="d", namespace=ns)
        with pytest.raises(NotFoundError):
            cms.get(name="d", namespace=ns)
    finally:
        api_client.close()
