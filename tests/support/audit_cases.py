"""Requests whose audit events strata's log must hold as kube's does, under
the policy in audit_policy.yaml (next to this file): a Secret's at Metadata,
a ConfigMap's at RequestResponse, /version's at Metadata, nothing else. Each
step's events are reduced to what does not change from run to run (ids,
times, uids and resource versions replaced by their names).

kube's events (audit_kube.json, next to this file) were recorded from
kube-apiserver v1.36 with

    KUBE_EXTRA_ARGS="--audit-policy-file=$PWD/tests/support/audit_policy.yaml \\
      --audit-log-path=/tmp/kube-audit.log" ../shared/kube/with_kube.sh \\
      .venv/bin/python -m tests.support.audit_cases /tmp/kube-audit.log \\
      > tests/support/audit_kube.json

(with_kube.sh's users: admin in system:masters, bob with no bindings; the
stranger is admin's session with a token nobody has)."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from tests.support.kube_recording import kube_session

Obj = dict[str, Any]
HERE = Path(__file__).parent
POLICY = HERE / "audit_policy.yaml"
RECORDED = HERE / "audit_kube.json"
NAMESPACE = "audit-test"
CONFIGMAPS = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
SECRETS = f"/api/v1/namespaces/{NAMESPACE}/secrets"
AGENT = "audit-cases/1"
# The Secret's value, which no event may hold (plain and base64).
SECRET_VALUE = "s3cret-value-in-audit-test"
SECRET_DATA = base64.b64encode(SECRET_VALUE.encode()).decode()
# Values that differ from run to run, replaced by their key's name.
_VOLATILE = frozenset({"uid", "resourceVersion", "creationTimestamp", "time"})
_TIMES = ("requestReceivedTimestamp", "stageTimestamp")


@dataclass(frozen=True)
class Step:
    name: str
    method: str
    path: str
    body: Obj | None = None
    # admin, bob (no bindings) or stranger (a token nobody has).
    who: str = "admin"
    headers: Mapping[str, str] = field(default_factory=dict)


STEPS = (
    Step("create namespace", "POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}}),
    Step(
        "create secret",
        "POST",
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s1"},
            "data": {"password": SECRET_DATA},
        },
    ),
    Step("get secret", "GET", f"{SECRETS}/s1"),
    Step(
        "create configmap",
        "POST",
        CONFIGMAPS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"k": "v"}},
        headers={"X-Forwarded-For": "10.1.2.3", "Audit-ID": "audit-cases-create"},
    ),
    Step("get configmap", "GET", f"{CONFIGMAPS}/c1"),
    Step("list configmaps", "GET", CONFIGMAPS),
    Step("watch configmaps", "GET", f"{CONFIGMAPS}?watch=1&timeoutSeconds=1&resourceVersion=0"),
    Step("get missing configmap", "GET", f"{CONFIGMAPS}/missing"),
    Step("forbidden get", "GET", f"{CONFIGMAPS}/c1", who="bob"),
    Step("unauthenticated get", "GET", f"{CONFIGMAPS}/c1", who="stranger"),
    Step(
        "patch configmap",
        "PATCH",
        f"{CONFIGMAPS}/c1",
        {"data": {"k2": "v2"}},
        headers={"Content-Type": "application/merge-patch+json"},
    ),
    Step(
        "update configmap",
        "PUT",
        f"{CONFIGMAPS}/c1",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"k": "v3"}},
    ),
    Step(
        "delete configmap",
        "DELETE",
        f"{CONFIGMAPS}/c1",
        {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
    ),
    Step("delete secret", "DELETE", f"{SECRETS}/s1"),
    Step("get version", "GET", "/version"),
    Step("delete namespace", "DELETE", f"/api/v1/namespaces/{NAMESPACE}"),
)


async def exercise(
    sessions: Mapping[str, aiohttp.ClientSession], answers: dict[str, bytes] | None = None
) -> dict[str, str]:
    """Send every step (sessions: admin and bob); the audit id each answer
    gave (and, into answers, each answer's body)."""
    ids = {}
    for step in STEPS:
        headers = {"User-Agent": AGENT, **step.headers}
        session = sessions["bob" if step.who == "bob" else "admin"]
        if step.who == "stranger":
            headers["Authorization"] = "Bearer nobody-has-this-token"
        body = None if step.body is None else orjson.dumps(step.body)
        if body is not None:
            headers.setdefault("Content-Type", "application/json")
        async with session.request(step.method, step.path, data=body, headers=headers) as answer:
            answered = await answer.read()
            ids[step.name] = answer.headers["Audit-ID"]
        if answers is not None:
            answers[step.name] = answered
    return ids


def steady(value: Any, key: str = "") -> Any:
    """value with what changes from run to run replaced by its key's name."""
    if key in _VOLATILE and isinstance(value, str):
        return f"<{key}>"
    if isinstance(value, dict):
        return {k: steady(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


def by_step(lines: list[bytes], ids: Mapping[str, str]) -> dict[str, list[Obj]]:
    """The events of each step, in the order written, their changing values
    replaced (their keys' order is kept: the test compares it too)."""
    steps = {audit_id: name for name, audit_id in ids.items()}
    found: dict[str, list[Obj]] = {name: [] for name in ids}
    for line in lines:
        event = orjson.loads(line)
        name = steps.get(event["auditID"])
        if name is None:
            continue
        event["auditID"] = "<auditID>"
        for key in _TIMES:
            event[key] = "<time>"
        # The users' uids are the token file's, the same every run.
        found[name].append({k: v if k == "user" else steady(v, k) for k, v in event.items()})
    return found


def recorded() -> dict[str, list[Obj]]:
    answers: dict[str, list[Obj]] = orjson.loads(RECORDED.read_bytes())
    return answers


def dumps(events: Mapping[str, list[Obj]]) -> str:
    """As the other recordings: a step a key, an event a line."""
    parts = [
        f"  {orjson.dumps(name).decode()}: ["
        + ",".join(f"\n    {orjson.dumps(event).decode()}" for event in steps)
        + ("\n  ]" if steps else "]")
        for name, steps in events.items()
    ]
    return "{\n" + ",\n".join(parts) + "\n}\n"


async def _record(log: Path) -> None:
    with tempfile.TemporaryDirectory() as folder:
        admin = kube_session(Path(os.environ["KUBECONFIG"]), Path(folder))
        bob = kube_session(Path(os.environ["BOB_KUBECONFIG"]), Path(folder))
        async with admin, bob:
            ids = await exercise({"admin": admin, "bob": bob})
    lines = (await asyncio.to_thread(log.read_bytes)).splitlines()
    sys.stdout.write(dumps(by_step(lines, ids)))


if __name__ == "__main__":
    asyncio.run(_record(Path(sys.argv[1])))
