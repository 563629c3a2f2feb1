"""Acceptance 4 of issue 29: with an audit policy at Metadata for Secrets and
RequestResponse for ConfigMaps (tests/support/audit_policy.yaml), strata's
audit log holds one event per request stage with kube's fields, as a real
kube-apiserver wrote them for the same requests (tests/support/audit_kube.json,
recorded by tests/support/audit_cases.py), and a Secret's data is nowhere in it.

A system of its own, with RBAC as with_kube.sh's kube has it: the audit flags
are the gateway's, given at start."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import orjson
import pytest

from strata.dev import System
from tests.support import audit_cases

ADMIN_TOKEN, BOB_TOKEN = "audit-admin-token", "audit-bob-token"
# The log's lines, each step's audit id, each step's answer.
Written = tuple[list[bytes], dict[str, str], dict[str, bytes]]
# Steps whose answers are not kube's, so neither is their events' responseObject:
# strata's managedFields lack kube's "." entry for a map set whole (f:data), and
# its list items keep their kind and apiVersion. Their responseObject is
# checked to be what strata answered instead.
ANSWERS_DIFFER = frozenset(
    {"create configmap", "get configmap", "list configmaps", "patch configmap", "update configmap"}
)


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[System, Path]]:
    home = tmp_path_factory.mktemp("strata-audit")
    tokens = home / "tokens.csv"
    # with_kube.sh's users, so that the events' users are kube's.
    tokens.write_text(f'{ADMIN_TOKEN},admin,uid-admin,"system:masters"\n{BOB_TOKEN},bob,uid-bob\n')
    log = home / "audit.log"
    env = {
        "STRATA_TOKEN_AUTH_FILE": str(tokens),
        "STRATA_AUDIT_POLICY_FILE": str(audit_cases.POLICY),
        "STRATA_AUDIT_LOG_PATH": str(log),
        # As kube's: bob, with no bindings, is refused.
        "STRATA_AUTHORIZATION_MODE": "RBAC",
    }
    system = System(home, gateway_port=0, env=env)
    system.start()
    yield system, log
    system.stop()


def _session(system: System, token: str) -> aiohttp.ClientSession:
    assert system.endpoints is not None
    context = ssl.create_default_context(cafile=str(system.ca_file))
    return aiohttp.ClientSession(
        base_url=system.endpoints.gateway,
        headers={"Authorization": f"Bearer {token}"},
        connector=aiohttp.TCPConnector(ssl=context),
    )


@pytest.fixture(scope="module")
async def written(audited: tuple[System, Path]) -> AsyncIterator[Written]:
    """The steps sent to strata, and its log once the last step's events are in."""
    system, log = audited
    answers: dict[str, bytes] = {}
    async with _session(system, ADMIN_TOKEN) as admin, _session(system, BOB_TOKEN) as bob:
        ids = await audit_cases.exercise({"admin": admin, "bob": bob}, answers)
    last = ids["get version"].encode()
    deadline = time.monotonic() + 10
    while True:
        lines = (await asyncio.to_thread(log.read_bytes)).splitlines()
        if sum(last in line for line in lines) == 2 or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    yield lines, ids, answers


async def test_the_log_holds_kubes_events_for_each_stage(written: Written) -> None:
    lines, ids, answers = written
    found = audit_cases.by_step(lines, ids)
    expected = audit_cases.recorded()
    for step in ANSWERS_DIFFER:
        answered = audit_cases.steady(orjson.loads(answers[step]))
        assert found[step][-1].pop("responseObject") == answered
        del expected[step][-1]["responseObject"]
    assert found == expected
    # The fields in kube's order too, the objects' included.
    assert [orjson.dumps(e) for s in found.values() for e in s] == [
        orjson.dumps(e) for s in expected.values() for e in s
    ]


async def test_one_event_per_stage_and_no_secret_data(written: Written) -> None:
    lines, ids, _ = written
    assert ids["create configmap"] == "audit-cases-create"  # the client's Audit-ID
    stages: dict[str, list[str]] = {}
    for line in lines:
        event = orjson.loads(line)
        stages.setdefault(event["auditID"], []).append(event["stage"])
    assert stages[ids["get secret"]] == ["RequestReceived", "ResponseComplete"]
    assert stages[ids["watch configmaps"]] == [
        "RequestReceived",
        "ResponseStarted",
        "ResponseComplete",
    ]
    assert stages[ids["unauthenticated get"]] == ["ResponseStarted"]
    assert ids["create namespace"] not in stages  # level None
    text = b"\n".join(lines)
    assert audit_cases.SECRET_VALUE.encode() not in text
    assert audit_cases.SECRET_DATA.encode() not in text
    # Go's escapes, as kube writes them.
    assert b"watch=1\\u0026timeoutSeconds=1" in text
