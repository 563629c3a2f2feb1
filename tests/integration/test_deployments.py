"""apps/v1 Deployments through the real gateway and services: kube's defaults
and spec rules as a registry tester table, the generation rule, and the status
and scale subresources."""

from __future__ import annotations

import copy
from typing import Any

import aiohttp
import orjson
import pytest

from strata.api import names
from strata.etcd import Etcd
from tests.support.registry_tester import (
    Case,
    Obj,
    RegistryTester,
    answer,
    invalid,
    new_namespace,
    refused,
    required,
)

APPS = "/apis/apps/v1"
NON_NEGATIVE = "must be greater than or equal to 0"
MISMATCH = "`selector` does not match template `labels`"


def deployment(
    name: str, labels: dict[str, str] | None = None, containers: Any = None, **spec: Any
) -> Obj:
    labels = {"app": name} if labels is None else labels
    if containers is None:
        containers = [{"name": "web", "image": "nginx:1.27"}]
    body_spec: Obj = {
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}},
        **spec,
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": body_spec,
    }


def without_selector(name: str) -> Obj:
    body = deployment(name)
    del body["spec"]["selector"]
    return body


def replace_selector(obj: Obj) -> None:
    obj["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    obj["spec"]["template"]["metadata"]["labels"] = {"app": "other"}


CONTAINERS = "spec.template.spec.containers"
DEPLOYMENT_CASES = [
    Case(
        id="defaults",
        body=deployment("defaults"),
        expect={
            "metadata.generation": 1,
            "spec.replicas": 1,
            "spec.strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
            },
            "spec.revisionHistoryLimit": 10,
            "spec.progressDeadlineSeconds": 600,
            "spec.template.spec.restartPolicy": "Always",
            "spec.template.spec.dnsPolicy": "ClusterFirst",
            "spec.template.spec.containers": [
                {
                    "name": "web",
                    "image": "nginx:1.27",
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            ],
            "status": {},
        },
    ),
    Case(
        id="latest-image-pulls-always",
        body=deployment("latest", containers=[{"name": "a", "image": "registry:5000/app"}]),
        expect={
            "spec.template.spec.containers": [
                {
                    "name": "a",
                    "image": "registry:5000/app",
                    "imagePullPolicy": "Always",
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            ]
        },
    ),
    Case(
        id="status-on-create-is-dropped",
        body={**deployment("nostatus"), "status": {"replicas": 3}},
        expect={"status": {}},
    ),
    Case(
        id="negative-replicas",
        body=deployment("negative", replicas=-1),
        causes=(invalid("spec.replicas", "-1", NON_NEGATIVE),),
    ),
    Case(
        id="selector-required",
        body=without_selector("noselector"),
        causes=(
            required("spec.selector"),
            invalid("spec.template.metadata.labels", '{"app":"noselector"}', MISMATCH),
        ),
    ),
    Case(
        id="empty-selector",
        body={
            **deployment("emptysel"),
            "spec": {**deployment("emptysel")["spec"], "selector": {}},
        },
        causes=(invalid("spec.selector", "{}", "empty selector is invalid for deployment"),),
    ),
    Case(
        id="selector-does-not-match-template",
        body={
            **deployment("mismatch"),
            "spec": {**deployment("mismatch")["spec"], "selector": {"matchLabels": {"app": "x"}}},
        },
        causes=(invalid("spec.template.metadata.labels", '{"app":"mismatch"}', MISMATCH),),
    ),
    Case(
        id="selector-expression-operator",
        body={
            **deployment("badop"),
            "spec": {
                **deployment("badop")["spec"],
                "selector": {"matchExpressions": [{"key": "app", "operator": "Like"}]},
            },
        },
        causes=(
            (
                "FieldValueNotSupported",
                "spec.selector.matchExpressions[0].operator",
                'Unsupported value: "Like": supported values: "In", "NotIn", "Exists", '
                '"DoesNotExist"',
            ),
            invalid(
                "spec.selector",
                '{"matchExpressions":[{"key":"app","operator":"Like"}]}',
                "invalid label selector",
            ),
        ),
    ),
    Case(
        id="containers-required",
        body=deployment("nocontainers", containers=[]),
        causes=(required(CONTAINERS),),
    ),
    Case(
        id="container-name-and-image-required",
        body=deployment("unnamed", containers=[{"image": ""}]),
        causes=(required(f"{CONTAINERS}[0].name"), required(f"{CONTAINERS}[0].image")),
    ),
    Case(
        id="container-name-is-a-label",
        body=deployment("badname", containers=[{"name": "Web", "image": "nginx"}]),
        causes=(invalid(f"{CONTAINERS}[0].name", '"Web"', names.LABEL_ERROR),),
    ),
    Case(
        id="container-names-unique",
        body=deployment(
            "dupes", containers=[{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]
        ),
        causes=(("FieldValueDuplicate", f"{CONTAINERS}[1].name", 'Duplicate value: "a"'),),
    ),
    Case(
        id="container-port-range",
        body=deployment(
            "badport", containers=[{"name": "a", "image": "x", "ports": [{"containerPort": 70000}]}]
        ),
        causes=(
            invalid(
                f"{CONTAINERS}[0].ports[0].containerPort",
                "70000",
                "must be between 1 and 65535, inclusive",
            ),
        ),
    ),
    Case(
        id="restart-policy-always",
        body={
            **deployment("never"),
            "spec": {
                **deployment("never")["spec"],
                "template": {
                    "metadata": {"labels": {"app": "never"}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "a", "image": "x"}],
                    },
                },
            },
        },
        causes=(
            (
                "FieldValueNotSupported",
                "spec.template.spec.restartPolicy",
                'Unsupported value: "Never": supported values: "Always"',
            ),
        ),
    ),
    # kube 1.36 names the strategy itself, its value the internal Go struct as
    # encoding/json writes it (recorded with ../shared/kube/with_kube.sh).
    Case(
        id="strategy-type",
        body=deployment("badstrategy", strategy={"type": "Canary"}),
        causes=(
            (
                "FieldValueNotSupported",
                "spec.strategy",
                'Unsupported value: {"Type":"Canary","RollingUpdate":null}: '
                'supported values: "Recreate", "RollingUpdate"',
            ),
        ),
    ),
    Case(
        id="strategy-type-with-rolling-update",
        body=deployment(
            "badrolling",
            strategy={"type": "Bog<us", "rollingUpdate": {"maxUnavailable": 2, "maxSurge": "a&b"}},
        ),
        causes=(
            (
                "FieldValueNotSupported",
                "spec.strategy",
                'Unsupported value: {"Type":"Bog\\u003cus","RollingUpdate":'
                '{"MaxUnavailable":2,"MaxSurge":"a\\u0026b"}}: '
                'supported values: "Recreate", "RollingUpdate"',
            ),
        ),
    ),
    Case(
        id="strategy-type-with-half-a-rolling-update",
        body=deployment(
            "halfrolling", strategy={"type": "Bogus", "rollingUpdate": {"maxSurge": "30%"}}
        ),
        causes=(
            (
                "FieldValueNotSupported",
                "spec.strategy",
                'Unsupported value: {"Type":"Bogus","RollingUpdate":'
                '{"MaxUnavailable":0,"MaxSurge":"30%"}}: '
                'supported values: "Recreate", "RollingUpdate"',
            ),
        ),
    ),
    Case(
        id="recreate-has-no-rolling-update",
        body=deployment("recreate", strategy={"type": "Recreate", "rollingUpdate": {}}),
        causes=(
            (
                "FieldValueForbidden",
                "spec.strategy.rollingUpdate",
                "Forbidden: may not be specified when strategy `type` is 'Recreate'",
            ),
        ),
    ),
    Case(
        id="rolling-update-not-both-zero",
        body=deployment(
            "zeroes",
            strategy={
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0},
            },
        ),
        causes=(
            invalid(
                "spec.strategy.rollingUpdate.maxUnavailable",
                "0",
                "may not be 0 when `maxSurge` is 0",
            ),
        ),
    ),
    Case(
        id="progress-deadline-after-min-ready",
        body=deployment("deadline", minReadySeconds=30, progressDeadlineSeconds=30),
        causes=(
            invalid("spec.progressDeadlineSeconds", "30", "must be greater than minReadySeconds"),
        ),
    ),
    Case(
        id="selector-is-immutable",
        body=deployment("immutable"),
        update=replace_selector,
        causes=(invalid("spec.selector", '{"matchLabels":{"app":"other"}}', "field is immutable"),),
    ),
    Case(
        id="update-keeps-status",
        body=deployment("keepstatus"),
        update=lambda obj: obj.update(status={"replicas": 5}),
        expect={"status": {}, "metadata.generation": 1},
    ),
]


@pytest.fixture(scope="module")
async def namespace(http: aiohttp.ClientSession) -> str:
    return await new_namespace(http, "deploy")


@pytest.mark.parametrize("case", DEPLOYMENT_CASES, ids=str)
async def test_deployments(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str, case: Case
) -> None:
    collection = f"{APPS}/namespaces/{namespace}/deployments"
    await RegistryTester(http, system_etcd, collection, "Deployment", "apps").run(case)


async def _created(http: aiohttp.ClientSession, namespace: str, name: str, **spec: Any) -> Obj:
    collection = f"{APPS}/namespaces/{namespace}/deployments"
    return await answer(http, "POST", collection, 201, json=deployment(name, **spec))


async def test_an_update_to_an_unknown_strategy_is_refused_in_kubes_words(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    """kube v1.36.2's whole answer to a merge patch setting a strategy type it
    does not know (its rollingUpdate nulled), recorded byte for byte."""
    await _created(http, namespace, "okdep")
    patch = {"spec": {"strategy": {"type": "Bogus", "rollingUpdate": None}}}
    async with http.patch(
        f"{APPS}/namespaces/{namespace}/deployments/okdep",
        data=orjson.dumps(patch),
        headers={"Content-Type": "application/merge-patch+json"},
    ) as response:
        assert response.status == 422
        body = await response.read()
    unsupported = (
        'Unsupported value: {\\"Type\\":\\"Bogus\\",\\"RollingUpdate\\":null}: '
        'supported values: \\"Recreate\\", \\"RollingUpdate\\"'
    )
    assert (
        body
        == (
            '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
            f'"Deployment.apps \\"okdep\\" is invalid: spec.strategy: {unsupported}",'
            '"reason":"Invalid","details":{"name":"okdep","group":"apps","kind":"Deployment",'
            f'"causes":[{{"reason":"FieldValueNotSupported","message":"{unsupported}",'
            '"field":"spec.strategy"}]},"code":422}\n'
        ).encode()
    )


async def test_generation_counts_spec_and_annotation_changes_only(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    created = await _created(http, namespace, "generations")
    path = f"{APPS}/namespaces/{namespace}/deployments/generations"
    assert created["metadata"]["generation"] == 1

    relabelled = copy.deepcopy(created)
    relabelled["metadata"]["labels"] = {"tier": "web"}
    relabelled["metadata"]["generation"] = 40  # a client's generation is ignored
    relabelled = await answer(http, "PUT", path, 200, json=relabelled)
    assert relabelled["metadata"]["generation"] == 1

    scaled = copy.deepcopy(relabelled)
    scaled["spec"]["replicas"] = 3
    scaled = await answer(http, "PUT", path, 200, json=scaled)
    assert scaled["metadata"]["generation"] == 2

    annotated = copy.deepcopy(scaled)
    annotated["metadata"]["annotations"] = {"note": "copied to replica sets"}
    annotated = await answer(http, "PUT", path, 200, json=annotated)
    assert annotated["metadata"]["generation"] == 3


async def test_status_subresource_writes_only_status(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    created = await _created(http, namespace, "statuses")
    path = f"{APPS}/namespaces/{namespace}/deployments/statuses"
    sent = copy.deepcopy(created)
    sent["spec"]["replicas"] = 9
    sent["metadata"]["labels"] = {"ignored": "yes"}
    sent["status"] = {"replicas": 1, "readyReplicas": 1, "observedGeneration": 1}
    written = await answer(http, "PUT", f"{path}/status", 200, json=sent)
    assert written["status"] == sent["status"]
    assert written["spec"] == created["spec"]
    assert "labels" not in written["metadata"]
    assert written["metadata"]["generation"] == 1
    assert await answer(http, "GET", f"{path}/status", 200) == written

    # A write to the main resource keeps the status the subresource wrote.
    main = copy.deepcopy(written)
    main["status"] = {}
    main["spec"]["replicas"] = 2
    after = await answer(http, "PUT", path, 200, json=main)
    assert after["status"] == sent["status"]

    bad = copy.deepcopy(after)
    bad["status"] = {"replicas": 1, "readyReplicas": 2, "availableReplicas": -1}
    status = await refused(http, system_etcd, "PUT", f"{path}/status", json=bad)
    assert (status["code"], status["reason"]) == (422, "Invalid")
    causes = sorted((c["field"], c["message"]) for c in status["details"]["causes"])
    assert causes == [
        ("status.availableReplicas", f"Invalid value: -1: {NON_NEGATIVE}"),
        ("status.readyReplicas", "Invalid value: 2: cannot be greater than status.replicas"),
    ]

    stale = copy.deepcopy(created)  # the resourceVersion of before the writes
    status = await refused(http, system_etcd, "PUT", f"{path}/status", json=stale)
    assert (status["code"], status["reason"]) == (409, "Conflict")


async def test_scale_subresource_reads_and_writes_replicas(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    created = await _created(http, namespace, "scaled", replicas=2)
    path = f"{APPS}/namespaces/{namespace}/deployments/scaled"
    scale = await answer(http, "GET", f"{path}/scale", 200)
    assert scale == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": "scaled",
            "namespace": namespace,
            "uid": created["metadata"]["uid"],
            "resourceVersion": created["metadata"]["resourceVersion"],
            "creationTimestamp": created["metadata"]["creationTimestamp"],
        },
        "spec": {"replicas": 2},
        "status": {"replicas": 0, "selector": "app=scaled"},
    }
    scale["spec"]["replicas"] = 5
    scaled = await answer(http, "PUT", f"{path}/scale", 200, json=scale)
    assert scaled["spec"] == {"replicas": 5}
    assert scaled["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    stored = await answer(http, "GET", path, 200)
    assert stored["spec"]["replicas"] == 5
    assert stored["metadata"]["generation"] == 2

    # The Scale's resourceVersion is a precondition, as the object's is.
    status = await refused(http, system_etcd, "PUT", f"{path}/scale", json=scale)
    assert (status["code"], status["reason"]) == (409, "Conflict")

    negative = {"spec": {"replicas": -1}, "metadata": {"name": "scaled"}}
    status = await refused(http, system_etcd, "PUT", f"{path}/scale", json=negative)
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        f'Scale.autoscaling "scaled" is invalid: spec.replicas: Invalid value: -1: {NON_NEGATIVE}'
    )
    assert status["details"]["kind"] == "Scale" and status["details"]["group"] == "autoscaling"

    seven = {"metadata": {"name": "scaled"}, "spec": {"replicas": 7}}
    dry = await answer(http, "PUT", f"{path}/scale?dryRun=All", 200, json=seven)
    assert dry["spec"] == {"replicas": 7}
    assert (await answer(http, "GET", path, 200))["spec"]["replicas"] == 5
    # kube v1.36: a Scale without a name does not say what it scales.
    unnamed = await refused(http, system_etcd, "PUT", f"{path}/scale", json={"spec": {}})
    assert (unnamed["code"], unnamed["reason"], unnamed["message"]) == (
        400, "BadRequest",
        "the name of the object (scaled based on URL) was undeterminable: name must be provided",
    )  # fmt: skip
    assert "details" not in unnamed


async def test_subresources_that_do_not_exist_are_not_found(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    await _created(http, namespace, "nosuch")
    path = f"{APPS}/namespaces/{namespace}/deployments/nosuch"
    status = await answer(http, "GET", f"{path}/log", 404)
    assert status["reason"] == "NotFound"
    cm = f"/api/v1/namespaces/{namespace}/configmaps/x/status"
    assert (await answer(http, "GET", cm, 404))["reason"] == "NotFound"
    missing = f"{APPS}/namespaces/{namespace}/deployments/absent/scale"
    status = await answer(http, "GET", missing, 404)
    assert status["message"] == 'deployments.apps "absent" not found'


async def test_a_field_of_the_wrong_type_is_a_bad_request(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    body = deployment("typed")
    body["spec"]["replicas"] = "three"
    collection = f"{APPS}/namespaces/{namespace}/deployments"
    status = await refused(http, system_etcd, "POST", collection, json=body)
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal '
        "string into Go struct field DeploymentSpec.spec.replicas of type int32"
    )


async def test_discovery_lists_deployments_with_their_subresources(
    http: aiohttp.ClientSession,
) -> None:
    listing = await answer(http, "GET", APPS, 200)
    entries = {r["name"]: r for r in listing["resources"]}
    assert entries["deployments"]["shortNames"] == ["deploy"]
    assert entries["deployments"]["categories"] == ["all"]
    assert entries["deployments/status"]["kind"] == "Deployment"
    assert entries["deployments/scale"] | {"verbs": []} == {
        "name": "deployments/scale",
        "singularName": "",
        "namespaced": True,
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
        "verbs": [],
    }
    assert "update" in entries["deployments/scale"]["verbs"]


async def test_deployments_are_stored_where_kube_stores_them(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    await _created(http, namespace, "located")
    key = f"/registry/deployments/{namespace}/located".encode()
    assert (await system_etcd.range(key)).count == 1


async def test_deployment_table_columns(http: aiohttp.ClientSession, namespace: str) -> None:
    await _created(http, namespace, "tabled", replicas=3)
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    path = f"{APPS}/namespaces/{namespace}/deployments/tabled"
    table = await answer(http, "GET", path, 200, headers=accept)
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns == [
        "Name",
        "Ready",
        "Up-to-date",
        "Available",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["tabled", "0/3", 0, 0]
    assert cells[5:] == ["web", "nginx:1.27", "app=tabled"]


async def test_a_scale_of_the_wrong_type_is_a_bad_request(
    http: aiohttp.ClientSession, system_etcd: Etcd, namespace: str
) -> None:
    await _created(http, namespace, "badscale")
    path = f"{APPS}/namespaces/{namespace}/deployments/badscale/scale"
    body = {"spec": {"replicas": "2"}}
    status = await refused(http, system_etcd, "PUT", path, json=body)
    assert (status["code"], status["reason"]) == (400, "BadRequest")
    assert status["message"] == (
        'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal string into '
        "Go struct field ScaleSpec.spec.replicas of type int32"
    )
    status = await refused(http, system_etcd, "PUT", path, json={"kind": "Deployment"})
    assert (status["code"], status["reason"]) == (400, "BadRequest")


async def test_duplicate_container_ports_earn_warnings(
    http: aiohttp.ClientSession, namespace: str
) -> None:
    containers = [
        {"name": "a", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
        {
            "name": "b",
            "image": "nginx:1.27",
            "ports": [{"containerPort": 80}, {"containerPort": 80, "hostPort": 8080}],
        },
    ]
    path = f"{APPS}/namespaces/{namespace}/deployments"
    async with http.post(path, json=deployment("ports", containers=containers)) as response:
        created = await response.json()
        assert response.status == 201, created
        assert response.headers.getall("Warning") == [
            '299 - "spec.template.spec.containers[1].ports[0]: duplicate port definition with '
            'spec.template.spec.containers[0].ports[0]"',
            '299 - "spec.template.spec.containers[1].ports[1]: overlapping port definition with '
            'spec.template.spec.containers[0].ports[0]"',
            '299 - "spec.template.spec.containers[1].ports[1]: overlapping port definition with '
            'spec.template.spec.containers[1].ports[0]"',
        ]
    # An update that leaves the template alone earns none.
    created["metadata"]["labels"] = {"touched": "yes"}
    async with http.put(f"{path}/ports", json=created) as response:
        assert response.status == 200
        assert "Warning" not in response.headers
