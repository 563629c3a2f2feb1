"""A fuzzer driven by the served OpenAPI document: hypothesis draws requests
for every operation /openapi/v2 lists (and those served that it leaves out:
subresource creates, the legacy /watch/ paths), with values for every
parameter each declares, the valid ones and the hostile ones, in the path, the
query and the body, and sends them to a system of the run's own. Every
answer comes within 10 s, none is a 5xx (but kube's own 504 for a
resourceVersion etcd has not reached), every error is a kube Status of its
HTTP code (or Go's plain 404 outside what is served), every watch ends when
its timeoutSeconds says; every operation is sent to, and the run sends at
least STRATA_FUZZ_REQUESTS requests (2,000 by default; set it higher for a
longer run). The counts and the time are printed at the end of the run.

schemathesis reads the document as well, but draws a case in 20 to 110 ms on
this machine (strategies built per case), which alone would take longer than
the whole run may; the strategies here are built once per operation."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from strata.dev import System
from tests.fuzz.client import Gateway
from tests.fuzz.conftest import REPORT
from tests.fuzz.drafts import Draft, drafts
from tests.fuzz.operations import Operation
from tests.fuzz.seeding import Run, prepare

# The default keeps `make test` near a minute; a longer run asks for more.
BUDGET = int(os.environ.get("STRATA_FUZZ_REQUESTS", "2000"))
THREADS = 3


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """A system of the run's own (its deletes and finalizes harm no other
    test), set up for fuzzing."""
    home: Path = tmp_path_factory.mktemp("fuzz-home")
    system = System(home, gateway_port=0)
    system.start()
    try:
        assert system.endpoints is not None
        gateway = Gateway(system.endpoints.gateway, system.admin_token, str(system.ca_file))
        try:
            yield prepare(gateway)
        finally:
            gateway.close()
    finally:
        system.stop()


def _fuzz(run: Run, operation: Operation, examples: int) -> None:
    """examples requests of operation, as hypothesis draws them."""

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(draft=drafts(operation, run.context))
    def fuzzed(draft: Draft) -> None:
        run.send(draft)

    fuzzed()


def _summary(run: Run, seconds: float) -> list[str]:
    tally = run.gateway.tally
    statuses = ", ".join(f"{code}: {n}" for code, n in sorted(tally.statuses.items()))
    documented = sum(o.documented for o in run.operations)
    return [
        f"{tally.requests} requests over {len(run.operations)} operations "
        f"({documented} in /openapi/v2) in {seconds:.1f} s, {tally.watches} of them watches",
        f"answers: {statuses}",
    ]


@pytest.mark.timeout(120 + BUDGET // 20)
def test_every_served_operation_answers_fuzzed_requests_in_kube_s_terms(run: Run) -> None:
    started = time.monotonic()
    tally = run.gateway.tally
    try:
        with ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="fuzz") as pool:
            while (left := BUDGET - tally.requests) > 0:
                each = max(1, math.ceil(left / len(run.operations)))
                runs = [pool.submit(_fuzz, run, o, each) for o in run.operations]
                for done in runs:
                    done.result()
        violations = run.gateway.finish_watches()
    finally:
        REPORT.extend(_summary(run, time.monotonic() - started))
    assert violations == [], "\n".join(violations[:5])
    assert {o.key for o in run.operations} - set(run.covered) == set()
    assert tally.requests >= BUDGET >= 1
    # And the system still serves.
    status, _ = run.gateway.call("GET", f"/api/v1/namespaces/{run.prefix}/configmaps/target")
    assert status == 200
