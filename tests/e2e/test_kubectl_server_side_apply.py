"""Issue 27 item 10 with the installed kubectl: `kubectl apply --server-side`
of a ConfigMap's data {k1: v1}, then {}, then {k2: v2} keeps the last data. The
expected values are what kube-apiserver v1.36 answered to the same commands
(../shared/kube/with_kube.sh running them with kubectl v1.32)."""

from __future__ import annotations

import json

from strata.dev import System
from tests.e2e.test_kubectl import kubectl

# data, then managedFields (manager, operation, fieldsV1) after each apply, as kube answered.
KUBE = [
    ({"k1": "v1"}, [("kubectl", "Apply", {"f:data": {"f:k1": {}}})]),
    (None, [("kubectl", "Apply", {"f:data": {}})]),
    ({"k2": "v2"}, [("kubectl", "Apply", {"f:data": {"f:k2": {}}})]),
]


def test_server_side_apply_keeps_the_last_applied_data(system: System) -> None:
    name = "ssa-kubectl"
    try:
        for data, (expected_data, expected_managers) in zip(
            ("{k1: v1}", "{}", "{k2: v2}"), KUBE, strict=True
        ):
            manifest = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata: {data}\n"
            applied = kubectl(system, "apply", "--server-side", "-f", "-", stdin=manifest)
            assert applied.stdout.strip() == f"configmap/{name} serverside-applied"
            got = json.loads(
                kubectl(
                    system, "get", "configmap", name, "-o", "json", "--show-managed-fields"
                ).stdout
            )
            managers = [
                (e["manager"], e["operation"], e["fieldsV1"])
                for e in got["metadata"]["managedFields"]
            ]
            assert managers == expected_managers
            # kube leaves an empty map out (its Go types do); strata's registry
            # keeps it for now (reported with issue 27 item 10): no data either way.
            assert (got.get("data") or None) == expected_data
    finally:
        kubectl(system, "delete", "configmap", name, "--ignore-not-found")
