"""The issue's kubectl session, run with the installed kubectl against a
`make run`-style system, each result checked."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from strata.dev import System


def kubectl(
    system: System, *args: str, check: bool = True, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(system.kubeconfig)}
    result = subprocess.run(
        ["kubectl", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
    return result


class JsonStream:
    """Reads the concatenated JSON documents a kubectl watch prints."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._buffer = ""
        self._lock = threading.Lock()
        self._process = process
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            with self._lock:
                self._buffer += line

    def documents(self) -> list[dict[str, Any]]:
        with self._lock:
            text = self._buffer
        decoder, index = json.JSONDecoder(), 0
        documents: list[dict[str, Any]] = []
        while True:
            while index < len(text) and text[index].isspace():
                index += 1
            if index >= len(text):
                return documents
            try:
                document, index = decoder.raw_decode(text, index)
            except json.JSONDecodeError:
                return documents  # the rest is still arriving
            documents.append(document)

    def wait_for(self, count: int, timeout: float = 20) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            documents = self.documents()
            if len(documents) >= count:
                return documents
            time.sleep(0.1)
        raise AssertionError(f"expected {count} watch events, got {self.documents()}")


@contextmanager
def kubectl_watch(system: System, *args: str) -> Iterator[subprocess.Popen[str]]:
    """A long-running kubectl, stopped (and its pipes closed) on the way out."""
    env = {**os.environ, "KUBECONFIG": str(system.kubeconfig)}
    with subprocess.Popen(
        ["kubectl", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    ) as process:
        try:
            yield process
        finally:
            process.terminate()
            process.wait(10)


@pytest.fixture(scope="module")
def demo(system: System) -> str:
    kubectl(system, "create", "namespace", "demo")
    return "demo"


def test_create_namespace_and_list_it(system: System, demo: str) -> None:
    out = kubectl(system, "get", "namespaces").stdout.splitlines()
    assert out[0].split() == ["NAME", "STATUS", "AGE"]
    rows = {line.split()[0]: line.split()[1] for line in out[1:]}
    assert rows[demo] == "Active"
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= rows.keys()


def test_configmap_lifecycle_with_watch(system: System, demo: str) -> None:
    watch_args = ("-n", demo, "get", "configmaps", "-w", "--output-watch-events", "-o", "json")
    with kubectl_watch(system, *watch_args) as watch:
        stream = JsonStream(watch)
        # The list before the watch starts: an empty namespace prints nothing,
        # so give the watch a moment to be established before writing.
        time.sleep(1.5)
        created = kubectl(system, "-n", demo, "create", "configmap", "a", "--from-literal=k=v")
        assert created.stdout.strip() == "configmap/a created"

        table = kubectl(system, "-n", demo, "get", "configmaps").stdout.splitlines()
        assert table[0].split() == ["NAME", "DATA", "AGE"]
        assert table[1].split()[:2] == ["a", "1"]

        obj = json.loads(kubectl(system, "-n", demo, "get", "configmap", "a", "-o", "json").stdout)
        assert obj["data"] == {"k": "v"}
        assert obj["metadata"]["namespace"] == demo
        assert obj["metadata"]["uid"]
        as_yaml = kubectl(system, "-n", demo, "get", "configmap", "a", "-o", "yaml").stdout
        assert "kind: ConfigMap" in as_yaml and "k: v" in as_yaml

        obj["data"]["k"] = "changed"
        replaced = kubectl(system, "-n", demo, "replace", "-f", "-", stdin=json.dumps(obj))
        assert replaced.stdout.strip() == "configmap/a replaced"

        deleted = kubectl(system, "-n", demo, "delete", "configmap", "a")
        assert deleted.stdout.strip() == 'configmap "a" deleted'

        events = stream.wait_for(3)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events[:3]] == [
            ("ADDED", "a"),
            ("MODIFIED", "a"),
            ("DELETED", "a"),
        ]
        assert events[1]["object"]["data"] == {"k": "changed"}
        versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events[:3]]
        assert versions == sorted(versions) and len(set(versions)) == 3

    gone = kubectl(system, "-n", demo, "get", "configmap", "a", check=False)
    assert gone.returncode != 0
    assert 'configmaps "a" not found' in gone.stderr


def test_table_watch_prints_rows(system: System, demo: str) -> None:
    kubectl(system, "-n", demo, "create", "configmap", "before", "--from-literal=x=1")
    with kubectl_watch(system, "-n", demo, "get", "configmaps", "-w") as watch:
        time.sleep(1.5)
        kubectl(
            system,
            "-n",
            demo,
            "create",
            "configmap",
            "after",
            "--from-literal=x=1",
            "--from-literal=y=2",
        )
        deadline, lines = time.monotonic() + 20, list[str]()
        assert watch.stdout is not None
        while time.monotonic() < deadline and len(lines) < 3:
            lines.append(watch.stdout.readline())
        assert lines[0].split() == ["NAME", "DATA", "AGE"]
        names = {line.split()[0]: line.split()[1] for line in lines[1:]}
        assert names == {"before": "1", "after": "2"}


def test_secrets_and_service_accounts(system: System, demo: str) -> None:
    created = kubectl(
        system, "-n", demo, "create", "secret", "generic", "creds", "--from-literal=user=admin"
    )
    assert created.stdout.strip() == "secret/creds created"
    obj = json.loads(kubectl(system, "-n", demo, "get", "secret", "creds", "-o", "json").stdout)
    assert obj["type"] == "Opaque"
    assert base64.b64decode(obj["data"]["user"]) == b"admin"
    table = kubectl(system, "-n", demo, "get", "secrets").stdout.splitlines()
    assert table[0].split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert table[1].split()[:3] == ["creds", "Opaque", "1"]

    made = kubectl(system, "-n", demo, "create", "serviceaccount", "builder")
    assert made.stdout.strip() == "serviceaccount/builder created"
    accounts = kubectl(system, "-n", demo, "get", "sa").stdout.splitlines()
    # kube v1.36's columns; `default` (the controller's) sorts after builder.
    assert accounts[0].split() == ["NAME", "AGE"]
    assert accounts[1].split()[0] == "builder"

    refused = kubectl(
        system, "-n", demo, "create", "secret", "generic", "Bad", "--from-literal=k=v", check=False
    )
    assert refused.returncode != 0
    assert 'Secret "Bad" is invalid: metadata.name: Invalid value: "Bad"' in refused.stderr


def test_server_dry_run(system: System, demo: str) -> None:
    out = kubectl(
        system, "-n", demo, "create", "configmap", "dry", "--from-literal=k=v",
        "--dry-run=server", "-o", "json",
    )  # fmt: skip
    answered = json.loads(out.stdout)
    assert answered["data"] == {"k": "v"} and answered["metadata"]["uid"]
    absent = kubectl(system, "-n", demo, "get", "configmap", "dry", check=False)
    assert absent.returncode != 0 and 'configmaps "dry" not found' in absent.stderr
    kubectl(system, "-n", demo, "create", "configmap", "real", "--from-literal=k=v")
    deleted = kubectl(system, "-n", demo, "delete", "configmap", "real", "--dry-run=server")
    assert deleted.stdout.strip() == 'configmap "real" deleted (server dry run)'
    assert kubectl(system, "-n", demo, "get", "configmap", "real").returncode == 0


def test_edit_with_a_scripted_editor(
    system: System, demo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubectl(system, "-n", demo, "create", "configmap", "edited", "--from-literal=k=before")
    monkeypatch.setenv("KUBE_EDITOR", "sed -i -e s/before/after/")
    edited = kubectl(system, "-n", demo, "edit", "configmap", "edited")
    assert edited.stdout.strip() == "configmap/edited edited"
    obj = json.loads(
        kubectl(
            system, "-n", demo, "get", "configmap", "edited", "-o", "json", "--show-managed-fields"
        ).stdout
    )
    assert obj["data"] == {"k": "after"}
    owners = {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"]}
    assert owners["kubectl-edit"] == {"f:data": {"f:k": {}}}
    assert "kubectl-create" not in owners  # its only field is the editor's now


def test_api_resources_and_versions(system: System) -> None:
    resources = kubectl(system, "api-resources").stdout.splitlines()
    assert resources[0].split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    rows = {line.split()[0]: line.split()[1:] for line in resources[1:]}
    assert rows["configmaps"] == ["cm", "v1", "true", "ConfigMap"]
    assert rows["deployments"] == ["deploy", "apps/v1", "true", "Deployment"]
    assert rows["clusterroles"] == ["rbac.authorization.k8s.io/v1", "false", "ClusterRole"]
    versions = kubectl(system, "api-versions").stdout.split()
    assert {"v1", "apps/v1", "coordination.k8s.io/v1", "apiextensions.k8s.io/v1"} <= set(versions)


def test_leases_are_listed_with_their_holder(system: System, demo: str) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "leader", "namespace": demo},
        "spec": {"holderIdentity": "registry-0", "leaseDurationSeconds": 15},
    }
    applied = kubectl(system, "create", "-f", "-", stdin=json.dumps(lease))
    assert applied.stdout.strip() == "lease.coordination.k8s.io/leader created"
    table = kubectl(system, "-n", demo, "get", "leases").stdout.splitlines()
    assert table[0].split() == ["NAME", "HOLDER", "AGE"]
    assert table[1].split()[:2] == ["leader", "registry-0"]
    explained = kubectl(system, "explain", "lease.spec").stdout
    assert "holderIdentity\t<string>" in explained
    assert "leaseDurationSeconds\t<integer>" in explained


def test_deleting_a_namespace_deletes_what_is_in_it(system: System) -> None:
    kubectl(system, "create", "namespace", "doomed")
    kubectl(system, "-n", "doomed", "create", "configmap", "inside", "--from-literal=k=v")
    deleted = kubectl(system, "delete", "namespace", "doomed", "--timeout=60s")
    assert deleted.stdout.strip() == 'namespace "doomed" deleted'
    gone = kubectl(system, "get", "namespace", "doomed", check=False)
    assert gone.returncode != 0 and 'namespaces "doomed" not found' in gone.stderr
    left = kubectl(system, "-n", "doomed", "get", "configmaps", "-o", "json")
    assert json.loads(left.stdout)["items"] == []


DEPLOYMENT_YAML = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: applied
spec:
  replicas: 2
  selector: {matchLabels: {app: applied}}
  template:
    metadata: {labels: {app: applied}}
    spec:
      containers:
      - name: a
        image: nginx:1
        env: [{name: X, value: "1"}, {name: Z, value: "2"}]
      - name: b
        image: busybox
"""


def test_deployments_create_scale_label_and_patch(system: System, demo: str) -> None:
    # kubectl sends this one as protobuf.
    created = kubectl(
        system, "-n", demo, "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2"
    )
    assert created.stdout.strip() == "deployment.apps/web created"
    scaled = kubectl(system, "-n", demo, "scale", "deployment", "web", "--replicas=4")
    assert scaled.stdout.strip() == "deployment.apps/web scaled"
    kubectl(system, "-n", demo, "label", "deployment", "web", "tier=frontend")
    kubectl(
        system, "-n", demo, "patch", "deployment", "web", "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}',
    )  # fmt: skip
    obj = json.loads(kubectl(system, "-n", demo, "get", "deploy", "web", "-o", "json").stdout)
    assert obj["spec"]["replicas"] == 4
    assert obj["metadata"]["labels"] == {"app": "web", "tier": "frontend"}
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == [
        "nginx",
        "sidecar",
    ]
    assert obj["metadata"]["generation"] == 3  # created, scaled, patched; not labelled
    assert obj["spec"]["template"]["metadata"] == {"labels": {"app": "web"}}

    table = kubectl(system, "-n", demo, "get", "deployments", "-o", "wide").stdout.splitlines()
    assert table[0].split() == [
        "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR",
    ]  # fmt: skip
    row = table[1].split()
    assert row[:4] == ["web", "0/4", "0", "0"]
    assert row[5:] == ["nginx,sidecar", "nginx:1.27,busybox", "app=web"]

    refused = kubectl(
        system, "-n", demo, "patch", "deployment", "web", "--type=json", "-p",
        '[{"op":"replace","path":"/spec/replicas","value":-3}]', check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert (
        'The Deployment "web" is invalid: spec.replicas: Invalid value: -3: must be greater '
        "than or equal to 0" in refused.stderr
    )


def test_unknown_fields_are_refused_unless_validation_is_turned_down(
    system: System, demo: str
) -> None:
    typo = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: typo\ndta:\n  a: b\n"
    refused = kubectl(system, "-n", demo, "apply", "-f", "-", stdin=typo, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": ConfigMap in version "v1" '
        'cannot be handled as a ConfigMap: strict decoding error: unknown field "dta"'
    )
    warned = kubectl(system, "-n", demo, "apply", "--validate=warn", "-f", "-", stdin=typo)
    assert warned.stdout.strip() == "configmap/typo created"
    assert 'Warning: unknown field "dta"' in warned.stderr


def test_apply_creates_configures_and_leaves_unchanged(system: System, demo: str) -> None:
    def apply(manifest: str) -> str:
        args = ("-n", demo, "apply", "-f", "-")
        return kubectl(system, *args, stdin=manifest).stdout.strip()

    assert apply(DEPLOYMENT_YAML) == "deployment.apps/applied created"
    changed = DEPLOYMENT_YAML.replace('value: "1"', 'value: "9"').replace("name: b", "name: c")
    assert apply(changed) == "deployment.apps/applied configured"
    assert apply(changed) == "deployment.apps/applied unchanged"
    obj = json.loads(kubectl(system, "-n", demo, "get", "deploy", "applied", "-o", "json").stdout)
    containers = obj["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["a", "c"]
    assert containers[0]["env"] == [{"name": "X", "value": "9"}, {"name": "Z", "value": "2"}]
    assert obj["metadata"]["generation"] == 2
    assert kubectl(system, "-n", demo, "diff", "-f", "-", stdin=changed).returncode == 0


def test_services_get_cluster_ips_and_node_ports(system: System, demo: str) -> None:
    # kubectl sends these as protobuf.
    kubectl(system, "-n", demo, "create", "service", "clusterip", "web", "--tcp=80:8080")
    kubectl(system, "-n", demo, "create", "service", "nodeport", "np", "--tcp=80:8080")
    created = kubectl(
        system, "-n", demo, "create", "service", "externalname", "ext",
        "--external-name=db.example.com",
    )  # fmt: skip
    assert created.stdout.strip() == "service/ext created"
    table = kubectl(system, "-n", demo, "get", "services").stdout.splitlines()
    assert table[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    rows = {line.split()[0]: line.split() for line in table[1:]}
    web = json.loads(kubectl(system, "-n", demo, "get", "svc", "web", "-o", "json").stdout)
    np = json.loads(kubectl(system, "-n", demo, "get", "svc", "np", "-o", "json").stdout)
    node_port = np["spec"]["ports"][0]["nodePort"]
    assert rows["web"][1:5] == ["ClusterIP", web["spec"]["clusterIP"], "<none>", "80/TCP"]
    assert rows["np"][1:5] == ["NodePort", np["spec"]["clusterIP"], "<none>", f"80:{node_port}/TCP"]
    assert rows["ext"][1:5] == ["ExternalName", "<none>", "db.example.com", "<none>"]
    assert web["spec"]["clusterIP"] != np["spec"]["clusterIP"]
    assert web["spec"]["ports"][0]["targetPort"] == 8080


def test_rbac_objects_from_kubectl_create(system: System, demo: str) -> None:
    # kubectl sends these as protobuf.
    kubectl(
        system, "-n", demo, "create", "role", "reader", "--verb=get,list",
        "--resource=configmaps,deployments.apps",
    )  # fmt: skip
    kubectl(
        system, "-n", demo, "create", "rolebinding", "readers", "--role=reader",
        "--user=jane", "--group=devs", f"--serviceaccount={demo}:builder",
    )  # fmt: skip
    kubectl(
        system, "create", "clusterrole", f"{demo}-monitoring",
        "--aggregation-rule=example.com/aggregate-to-monitoring=true",
    )  # fmt: skip
    kubectl(
        system, "create", "clusterrolebinding", f"{demo}-admins", "--clusterrole=cluster-admin",
        "--group=ops",
    )  # fmt: skip
    role = json.loads(kubectl(system, "-n", demo, "get", "role", "reader", "-o", "json").stdout)
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]},
    ]
    wide = kubectl(system, "-n", demo, "get", "rolebinding", "readers", "-o", "wide").stdout
    header, row = (line.split() for line in wide.splitlines())
    assert header == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert row[:2] == ["readers", "Role/reader"]
    assert row[3:] == ["jane", "devs", f"{demo}/builder"]
    aggregate = json.loads(
        kubectl(system, "get", "clusterrole", f"{demo}-monitoring", "-o", "json").stdout
    )
    assert aggregate["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-monitoring": "true"}}]
    }
    admins = json.loads(
        kubectl(system, "get", "clusterrolebinding", f"{demo}-admins", "-o", "json").stdout
    )
    assert admins["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "ops"}
    ]
    names = kubectl(system, "get", "clusterroles", "-o", "name").stdout.split()
    assert {"clusterrole.rbac.authorization.k8s.io/" + n for n in ("admin", "edit", "view")} <= set(
        names
    )
    refused = kubectl(
        system, "-n", demo, "patch", "rolebinding", "readers", "--type=merge",
        "-p", '{"roleRef": {"name": "other"}}', check=False,
    )  # fmt: skip
    assert refused.returncode == 1
    assert 'The RoleBinding "readers" is invalid: roleRef: Invalid value: ' in refused.stderr
    assert refused.stderr.rstrip().endswith("cannot change roleRef")
    kubectl(system, "delete", "clusterrole", f"{demo}-monitoring")
    kubectl(system, "delete", "clusterrolebinding", f"{demo}-admins")


CRD_YAML = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.{group}
spec:
  group: {group}
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec:
                type: string
                pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){{4}}$'
              image: {{type: string}}
              replicas: {{type: integer, minimum: 1, maximum: 10, default: 1}}
"""

CRONTAB_YAML = """
apiVersion: {group}/v1
kind: CronTab
metadata:
  name: nightly
spec:
  cronSpec: "0 3 * * *"
  image: backup:1
"""


def test_custom_resource_definition_lifecycle(system: System, demo: str) -> None:
    group = f"{demo}.example.com"
    applied = kubectl(system, "apply", "-f", "-", stdin=CRD_YAML.format(group=group))
    assert applied.stdout.strip() == (
        f"customresourcedefinition.apiextensions.k8s.io/crontabs.{group} created"
    )
    kubectl(system, "wait", "--for=condition=Established", f"crd/crontabs.{group}", "--timeout=10s")
    # kubectl's default validation is the server's (its OpenAPI says so): an
    # unknown field is refused, as kube refuses it.
    typo = CRONTAB_YAML.format(group=group).replace("image:", "imag:")
    refused = kubectl(system, "-n", demo, "apply", "-f", "-", stdin=typo, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (BadRequest): error when creating "STDIN": CronTab in version "v1" '
        'cannot be handled as a CronTab: strict decoding error: unknown field "spec.imag"'
    )
    created = kubectl(
        system, "-n", demo, "apply", "-f", "-", stdin=CRONTAB_YAML.format(group=group)
    )
    assert created.stdout.strip() == f"crontab.{group}/nightly created"
    explained = kubectl(system, "explain", f"crontabs.{group}.spec").stdout
    assert "FIELDS:" in explained and "cronSpec\t<string>" in explained
    table = kubectl(system, "-n", demo, "get", "ct").stdout.splitlines()
    assert table[0].split() == ["NAME", "SPEC", "REPLICAS"]
    assert table[1].split() == ["nightly", "0", "3", "*", "*", "*", "1"]
    refused = kubectl(
        system, "-n", demo, "patch", f"crontabs.{group}", "nightly", "--type=merge",
        "-p", '{"spec": {"replicas": 20}}', check=False,
    )  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'The CronTab "nightly" is invalid: spec.replicas: Invalid value: 20: spec.replicas in '
        "body should be less than or equal to 10"
    )
    strategic = kubectl(
        system, "-n", demo, "patch", "ct", "nightly", "-p", '{"spec": {"replicas": 2}}',
        check=False,
    )  # fmt: skip
    assert strategic.returncode == 1
    assert "application/strategic-merge-patch+json is not supported" in strategic.stderr
    deleted = kubectl(system, "-n", demo, "delete", "ct", "nightly")
    assert deleted.stdout.strip() == f'crontab.{group} "nightly" deleted'
    kubectl(system, "delete", "crd", f"crontabs.{group}")
    gone = kubectl(system, "get", "crd", f"crontabs.{group}", check=False)
    assert gone.returncode == 1 and "NotFound" in gone.stderr


SSA_YAML = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
  labels: {app: web}
data:
  a: "1"
  b: "2"
"""


def test_server_side_apply_owns_fields_and_conflicts(system: System, demo: str) -> None:
    def apply(manifest: str, *flags: str) -> subprocess.CompletedProcess[str]:
        args = ("-n", demo, "apply", "--server-side", *flags, "-f", "-")
        return kubectl(system, *args, stdin=manifest, check=False)

    assert apply(SSA_YAML).stdout.strip() == "configmap/shared serverside-applied"
    assert apply(SSA_YAML).stdout.strip() == "configmap/shared serverside-applied"
    changed = SSA_YAML.replace('a: "1"', 'a: "9"')
    refused = apply(changed, "--field-manager=other")
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[0] == (
        'error: Apply failed with 1 conflict: conflict with "kubectl": .data.a'
    )
    forced = apply(changed, "--field-manager=other", "--force-conflicts")
    assert forced.stdout.strip() == "configmap/shared serverside-applied"
    obj = json.loads(
        kubectl(
            system, "-n", demo, "get", "configmap", "shared", "-o", "json", "--show-managed-fields"
        ).stdout
    )
    assert obj["data"] == {"a": "9", "b": "2"}
    owned = {e["manager"]: e["fieldsV1"] for e in obj["metadata"]["managedFields"]}
    assert owned["kubectl"]["f:data"] == {"f:b": {}}
    assert owned["other"]["f:data"] == {"f:a": {}, "f:b": {}}
    # kubectl's manager stops applying b (and takes a's new value, sharing it):
    # other still owns b, so it stays.
    kept = changed.replace('  b: "2"\n', "")
    assert apply(kept).returncode == 0
    data = kubectl(system, "-n", demo, "get", "configmap", "shared", "-o", "jsonpath={.data}")
    assert json.loads(data.stdout) == {"a": "9", "b": "2"}
    # Ordinary writes own what they change too: a label set by kubectl label
    # conflicts with an apply that wants another value.
    kubectl(system, "-n", demo, "label", "--overwrite", "configmap", "shared", "app=api")
    relabeled = apply(kept)
    assert relabeled.returncode == 1
    first = relabeled.stderr.splitlines()[0]
    assert first.startswith('error: Apply failed with 1 conflict: conflict with "kubectl-label" ')
    assert first.endswith(": .metadata.labels.app")


def _deployment(container: str, image: str) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: sidecars
spec:
  selector:
    matchLabels: {{app: sidecars}}
  template:
    metadata:
      labels: {{app: sidecars}}
    spec:
      containers:
      - name: {container}
        image: {image}
        ports:
        - containerPort: 8080
"""


def test_server_side_apply_merges_containers_by_name(system: System, demo: str) -> None:
    def apply(manifest: str, manager: str) -> subprocess.CompletedProcess[str]:
        args = ("-n", demo, "apply", "--server-side", f"--field-manager={manager}", "-f", "-")
        return kubectl(system, *args, stdin=manifest, check=False)

    def containers() -> list[dict[str, object]]:
        got = kubectl(system, "-n", demo, "get", "deployment", "sidecars", "-o", "json")
        return list(json.loads(got.stdout)["spec"]["template"]["spec"]["containers"])

    assert apply(_deployment("web", "nginx:1"), "team-web").returncode == 0
    # Another team's manager adds its own container: the list merges by name,
    # and each applies again (port protocol defaulted) without conflict.
    assert apply(_deployment("log", "fluentd:1"), "team-log").returncode == 0
    assert apply(_deployment("web", "nginx:2"), "team-web").returncode == 0
    assert [(c["name"], c["image"]) for c in containers()] == [
        ("web", "nginx:2"),
        ("log", "fluentd:1"),
    ]
    refused = apply(_deployment("log", "vector:1"), "team-web")
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[0] == (
        'error: Apply failed with 1 conflict: conflict with "team-log": '
        '.spec.template.spec.containers[name="log"].image'
    )
    # A manager that stops applying its container removes it, and only it.
    assert (
        apply(
            _deployment("web", "nginx:2").replace("- name: web", "- name: web2"), "team-web"
        ).returncode
        == 0
    )
    assert [c["name"] for c in containers()] == ["log", "web2"]
