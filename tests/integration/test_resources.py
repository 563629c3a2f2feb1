"""Each built-in resource's create/update/validation rules as a table, run
through the real gateway and services by tests/support/registry_tester.py."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import aiohttp
import pytest

from strata.api import names
from strata.etcd import Etcd
from tests.support.registry_tester import (
    Case,
    Obj,
    RegistryTester,
    configmap,
    new_namespace,
    required,
)
from tests.support.registry_tester import invalid as invalid_shown

INVALID = "FieldValueInvalid"
LABELS, ANNOTATIONS = "metadata.labels", "metadata.annotations"


def invalid(field: str, value: str, detail: str) -> tuple[str, str, str]:
    return invalid_shown(field, f'"{value}"', detail)


def namespace(name: str, **metadata: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, **metadata}}


def relabel(**labels: str) -> Any:
    def change(obj: Obj) -> None:
        obj["metadata"]["labels"] = labels

    return change


NAME_PART = f"name part {names.QUALIFIED_NAME_ERROR}"
IMMUTABLE_SET = "Forbidden: field is immutable when `immutable` is set"


def secret(name: str, kind: str = "", **fields: Any) -> Obj:
    body: Obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}
    if kind:
        body["type"] = kind
    return body


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# Labels and annotations are ObjectMeta's: every resource checks them the same way.
METADATA_CASES = [
    Case(
        id="labels-and-annotations-kept",
        body=configmap(
            "kept",
            metadata={
                "labels": {"app": "web", "example.com/tier": "", "a.b_c-D": "x.Y_z-1"},
                "annotations": {"Example.COM/Note": "any text at all, spaces included"},
            },
        ),
        expect={
            "metadata.labels": {"app": "web", "example.com/tier": "", "a.b_c-D": "x.Y_z-1"},
            "metadata.annotations": {"Example.COM/Note": "any text at all, spaces included"},
        },
    ),
    Case(
        id="label-key-bad-name-part",
        body=configmap("badkey", metadata={"labels": {"-app": "web"}}),
        causes=(invalid(LABELS, "-app", NAME_PART),),
    ),
    Case(
        id="label-key-bad-prefix",
        body=configmap("badprefix", metadata={"labels": {"Example.com/app": "web"}}),
        causes=(invalid(LABELS, "Example.com/app", f"prefix part {names.SUBDOMAIN_ERROR}"),),
    ),
    Case(
        id="label-key-empty-prefix",
        body=configmap("noprefix", metadata={"labels": {"/app": "web"}}),
        causes=(invalid(LABELS, "/app", "prefix part must be non-empty"),),
    ),
    Case(
        id="label-key-two-slashes",
        body=configmap("slashes", metadata={"labels": {"a/b/c": "web"}}),
        causes=(
            invalid(
                LABELS,
                "a/b/c",
                f"a qualified name {names.QUALIFIED_NAME_ERROR} with an optional DNS subdomain "
                "prefix and '/' (e.g. 'example.com/MyName')",
            ),
        ),
    ),
    Case(
        id="label-key-name-part-too-long",
        body=configmap("longkey", metadata={"labels": {"k" * 64: "v"}}),
        causes=(invalid(LABELS, "k" * 64, "name part must be no more than 63 characters"),),
    ),
    Case(
        id="label-value-bad",
        body=configmap("badvalue", metadata={"labels": {"app": "web server"}}),
        causes=(invalid(LABELS, "web server", names.LABEL_VALUE_ERROR),),
    ),
    Case(
        id="label-value-too-long",
        body=configmap("longvalue", metadata={"labels": {"app": "v" * 64}}),
        causes=(invalid(LABELS, "v" * 64, "must be no more than 63 characters"),),
    ),
    Case(
        id="annotation-key-bad",
        body=configmap("badnote", metadata={"annotations": {"note!": "x"}}),
        causes=(invalid(ANNOTATIONS, "note!", NAME_PART),),
    ),
    Case(
        id="annotations-too-large",
        body=configmap("bignote", metadata={"annotations": {"a": "x" * (256 * 1024)}}),
        causes=(("FieldValueTooLong", ANNOTATIONS, "Too long: may not be more than 262144 bytes"),),
    ),
    Case(
        id="finalizers-kept",
        body=configmap("finalized", metadata={"finalizers": ["example.com/keep", "orphan"]}),
        expect={"metadata.finalizers": ["example.com/keep", "orphan"]},
    ),
    Case(
        id="finalizer-bare-name-not-standard",
        body=configmap("barefinalizer", metadata={"finalizers": ["mine"]}),
        causes=(
            invalid(
                "metadata.finalizers",
                "mine",
                "name is neither a standard finalizer name nor is it fully qualified",
            ),
        ),
    ),
    Case(
        id="finalizer-bad-name",
        body=configmap("badfinalizer", metadata={"finalizers": ["example.com/-x"]}),
        causes=(invalid("metadata.finalizers", "example.com/-x", NAME_PART),),
    ),
    Case(
        id="finalizers-orphan-and-foreground",
        body=configmap("bothfinalizers", metadata={"finalizers": ["orphan", "foregroundDeletion"]}),
        causes=(
            (
                INVALID,
                "metadata.finalizers",
                'Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and '
                "foregroundDeletion cannot be both set",
            ),
        ),
    ),
    Case(
        id="update-keeps-valid-labels",
        body=configmap("relabelled", metadata={"labels": {"app": "web"}}),
        update=relabel(app="api", tier="back"),
        expect={"metadata.labels": {"app": "api", "tier": "back"}},
    ),
    Case(
        id="update-to-bad-label-refused",
        body=configmap("relabel-bad", metadata={"labels": {"app": "web"}}),
        update=relabel(app="not valid"),
        causes=(invalid(LABELS, "not valid", names.LABEL_VALUE_ERROR),),
    ),
]

CONFIGMAP_CASES = [
    Case(
        id="data-kept",
        body=configmap("data", data={"a.key": "1", "B_KEY": "two"}),
        expect={"data": {"a.key": "1", "B_KEY": "two"}},
    ),
    Case(
        id="update-changes-data",
        body=configmap("changed", data={"k": "1"}),
        update=lambda obj: obj.update(data={"k": "2"}),
        expect={"data": {"k": "2"}},
    ),
    Case(
        id="immutable-configmap-keeps-its-data",
        body=configmap("frozen", data={"k": "v"}, immutable=True),
        update=lambda obj: obj.update(data={"k": "w"}, binaryData={"b": b64("x")}),
        causes=(
            ("FieldValueForbidden", "data", IMMUTABLE_SET),
            ("FieldValueForbidden", "binaryData", IMMUTABLE_SET),
        ),
    ),
    Case(
        id="uid-immutable",
        body=configmap("uid"),
        update=lambda obj: obj["metadata"].update(uid="00000000-0000-0000-0000-000000000000"),
        causes=(
            invalid("metadata.uid", "00000000-0000-0000-0000-000000000000", "field is immutable"),
        ),
    ),
]


SECRET_CASES = [
    Case(
        id="opaque-by-default",
        body=secret("plain", data={"password": b64("s3cret")}),
        expect={"type": "Opaque", "data": {"password": b64("s3cret")}},
    ),
    Case(
        id="string-data-folded-into-data",
        body=secret("strings", data={"a": b64("1")}, stringData={"user": "admin", "a": "2"}),
        expect={"data": {"a": b64("2"), "user": b64("admin")}, "stringData": None},
    ),
    Case(
        id="data-key-invalid",
        body=secret("badkey", data={"no spaces": b64("x")}),
        causes=(
            invalid(
                "data[no spaces]",
                "no spaces",
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
                "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation "
                "is '[-._a-zA-Z0-9]+')",
            ),
        ),
    ),
    Case(
        id="too-large",
        body=secret("large", data={"a": b64("x" * 700_000), "b": b64("y" * 400_000)}),
        causes=(("FieldValueTooLong", "data", "Too long: may not be more than 1048576 bytes"),),
    ),
    Case(
        id="tls-needs-cert-and-key",
        body=secret("tls", "kubernetes.io/tls", data={"ca.crt": b64("x")}),
        causes=(required("data[tls.crt]"), required("data[tls.key]")),
    ),
    Case(
        id="tls-complete",
        body=secret("tls-ok", "kubernetes.io/tls", data={"tls.crt": b64("c"), "tls.key": b64("k")}),
        expect={"type": "kubernetes.io/tls"},
    ),
    Case(
        id="basic-auth-needs-a-username-or-password",
        body=secret("basic", "kubernetes.io/basic-auth", data={}),
        causes=(required("data[username]"), required("data[password]")),
    ),
    Case(
        id="basic-auth-with-an-empty-password",
        body=secret("basic-ok", "kubernetes.io/basic-auth", data={"password": ""}),
        expect={"data": {"password": ""}},
    ),
    Case(
        id="dockerconfigjson-needs-its-key",
        body=secret("docker", "kubernetes.io/dockerconfigjson"),
        causes=(required("data[.dockerconfigjson]"),),
    ),
    Case(
        id="ssh-auth-needs-its-key",
        body=secret("ssh", "kubernetes.io/ssh-auth"),
        causes=(required("data[ssh-privatekey]"),),
    ),
    Case(
        id="service-account-token-needs-its-account",
        body=secret("token", "kubernetes.io/service-account-token"),
        causes=(required("metadata.annotations[kubernetes.io/service-account.name]"),),
    ),
    Case(
        id="type-immutable",
        body=secret("retyped", data={"k": b64("v")}),
        update=lambda obj: obj.update(type="example.com/other"),
        causes=(invalid("type", "example.com/other", "field is immutable"),),
    ),
    Case(
        id="immutable-secret-keeps-its-data",
        body=secret("frozen", data={"k": b64("v")}, immutable=True),
        update=lambda obj: obj.update(data={"k": b64("w")}),
        causes=(("FieldValueForbidden", "data", IMMUTABLE_SET),),
    ),
    Case(
        id="immutable-stays-set",
        body=secret("frozen2", data={"k": b64("v")}, immutable=True),
        update=lambda obj: obj.update(immutable=False),
        causes=(("FieldValueForbidden", "immutable", IMMUTABLE_SET),),
    ),
    Case(
        id="immutable-secret-metadata-may-change",
        body=secret("frozen3", data={"k": b64("v")}, immutable=True),
        update=relabel(app="x"),
        expect={"metadata.labels": {"app": "x"}, "data": {"k": b64("v")}},
    ),
]

SERVICE_ACCOUNT_CASES = [
    Case(
        id="service-account-kept",
        body={
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "builder"},
            "automountServiceAccountToken": False,
            "imagePullSecrets": [{"name": "registry"}],
        },
        expect={"automountServiceAccountToken": False, "imagePullSecrets": [{"name": "registry"}]},
    ),
    Case(
        id="service-account-bad-name",
        body={"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "Builder"}},
        causes=(invalid("metadata.name", "Builder", names.SUBDOMAIN_ERROR),),
    ),
]


def lease(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": spec,
    }


LEASE_CASES = [
    Case(
        id="lease-kept",
        body=lease(
            "leader",
            holderIdentity="registry-0",
            leaseDurationSeconds=15,
            leaseTransitions=0,
            renewTime="2026-11-21T00:00:00.000000Z",
        ),
        expect={"spec.holderIdentity": "registry-0", "spec.leaseDurationSeconds": 15},
    ),
    Case(
        id="lease-renewed",
        body=lease("renewed", holderIdentity="a", leaseDurationSeconds=15),
        update=lambda obj: obj["spec"].update(holderIdentity="b", leaseTransitions=1),
        expect={"spec.holderIdentity": "b", "spec.leaseTransitions": 1},
    ),
    Case(
        id="lease-duration-positive",
        body=lease("zero", leaseDurationSeconds=0),
        causes=(
            (INVALID, "spec.leaseDurationSeconds", "Invalid value: 0: must be greater than 0"),
        ),
    ),
    Case(
        id="lease-transitions-not-negative",
        body=lease("negative", leaseTransitions=-1),
        causes=(
            (
                INVALID,
                "spec.leaseTransitions",
                "Invalid value: -1: must be greater than or equal to 0",
            ),
        ),
    ),
]

NAMESPACE_CASES = [
    Case(
        id="namespace-labelled",
        body=namespace(f"ns-{uuid.uuid4().hex[:8]}", labels={"team": "a"}),
        expect={"status.phase": "Active", "spec.finalizers": ["kubernetes"]},
    ),
    Case(
        id="namespace-bad-label",
        body=namespace("ns-bad-label", labels={"team": "-a"}),
        causes=(invalid(LABELS, "-a", names.LABEL_VALUE_ERROR),),
    ),
]


@pytest.fixture(scope="module")
async def tester_namespace(http: aiohttp.ClientSession) -> str:
    return await new_namespace(http, "tester")


@pytest.fixture(scope="module")
async def configmaps(
    http: aiohttp.ClientSession, system_etcd: Etcd, tester_namespace: str
) -> RegistryTester:
    collection = f"/api/v1/namespaces/{tester_namespace}/configmaps"
    return RegistryTester(http, system_etcd, collection, "ConfigMap")


@pytest.mark.parametrize("case", METADATA_CASES + CONFIGMAP_CASES, ids=str)
async def test_configmaps(configmaps: RegistryTester, case: Case) -> None:
    await configmaps.run(case)


@pytest.mark.parametrize("case", NAMESPACE_CASES, ids=str)
async def test_namespaces(http: aiohttp.ClientSession, system_etcd: Etcd, case: Case) -> None:
    await RegistryTester(http, system_etcd, "/api/v1/namespaces", "Namespace").run(case)


@pytest.mark.parametrize("case", SECRET_CASES, ids=str)
async def test_secrets(
    http: aiohttp.ClientSession, system_etcd: Etcd, tester_namespace: str, case: Case
) -> None:
    collection = f"/api/v1/namespaces/{tester_namespace}/secrets"
    await RegistryTester(http, system_etcd, collection, "Secret").run(case)


@pytest.mark.parametrize("case", SERVICE_ACCOUNT_CASES, ids=str)
async def test_serviceaccounts(
    http: aiohttp.ClientSession, system_etcd: Etcd, tester_namespace: str, case: Case
) -> None:
    collection = f"/api/v1/namespaces/{tester_namespace}/serviceaccounts"
    await RegistryTester(http, system_etcd, collection, "ServiceAccount").run(case)


@pytest.mark.parametrize("case", LEASE_CASES, ids=str)
async def test_leases(
    http: aiohttp.ClientSession, system_etcd: Etcd, tester_namespace: str, case: Case
) -> None:
    collection = f"/apis/coordination.k8s.io/v1/namespaces/{tester_namespace}/leases"
    await RegistryTester(http, system_etcd, collection, "Lease", "coordination.k8s.io").run(case)


async def test_leases_are_stored_where_kube_stores_them(
    http: aiohttp.ClientSession, system_etcd: Etcd, tester_namespace: str
) -> None:
    collection = f"/apis/coordination.k8s.io/v1/namespaces/{tester_namespace}/leases"
    async with http.post(collection, json=lease("located", holderIdentity="x")) as response:
        assert response.status == 201, await response.text()
    key = f"/registry/leases/{tester_namespace}/located".encode()
    assert (await system_etcd.range(key)).count == 1
