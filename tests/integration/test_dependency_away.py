"""A dependency away answers 503 with Retry-After, not an empty watch or a 500.

With the cacher (or the registry) killed, a watch that starts gets kube's
ServiceUnavailable Status and a Retry-After of a second, so a client waits
instead of opening it again at once; a list gets the same; the gateway stays
live and answers within a second; and once the process is back, the same
requests succeed within seconds (gRPC's own reconnect backoff would wait up to
two minutes)."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from strata.dev import System

WATCH = "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1"
LIST = "/api/v1/namespaces/default/configmaps"


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[System]:
    system = System(tmp_path_factory.mktemp("dependency-away"), gateway_port=0)
    system.start()
    try:
        yield system
    finally:
        system.stop()


def _call(
    system: System, path: str, body: bytes | None = None
) -> tuple[int, dict[str, str], bytes, float]:
    """GET path, or POST body to it."""
    assert system.endpoints is not None
    headers = {"Authorization": f"Bearer {system.admin_token}", "Content-Type": "application/json"}
    request = urllib.request.Request(system.endpoints.gateway + path, body, headers)
    context = ssl.create_default_context(cafile=str(system.ca_file))
    began = time.monotonic()
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            body = response.read()
            return response.status, dict(response.headers), body, time.monotonic() - began
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read(), time.monotonic() - began


def _until_status(system: System, path: str, wanted: int, seconds: float = 10.0) -> float:
    """Seconds until path answers wanted (fails the test past seconds)."""
    began = time.monotonic()
    while (status := _call(system, path)[0]) != wanted:
        assert time.monotonic() - began < seconds, f"{path} still answers {status}"
        time.sleep(0.2)
    return time.monotonic() - began


def _assert_unavailable(system: System, path: str, message: str) -> None:
    status, headers, body, _ = _call(system, path)
    assert (status, headers.get("Retry-After")) == (503, "1"), body
    answer = json.loads(body)
    assert answer["kind"] == "Status" and answer["reason"] == "ServiceUnavailable"
    assert answer["code"] == 503 and answer["details"] == {"retryAfterSeconds": 1}
    assert answer["message"].startswith(message), answer


def _assert_write_not_retried(system: System, message: str) -> None:
    """A write gets the 503 without Retry-After: client-go would send it again,
    and one that met a broken hop may have been stored all the same."""
    body = b'{"metadata": {"name": "while-away"}}'
    status, headers, answer, _ = _call(system, LIST, body)
    assert (status, "Retry-After" in headers) == (503, False), answer
    refusal = json.loads(answer)
    assert refusal["reason"] == "ServiceUnavailable" and "details" not in refusal
    assert refusal["message"].startswith(message), refusal


def _assert_live(system: System) -> None:
    status, _, body, took = _call(system, "/livez")
    assert (status, body) == (200, b"ok") and took < 1.0
    # Readiness follows within a poll of the hops below (a second or two),
    # each answer still coming at once.
    deadline = time.monotonic() + 5
    while (answer := _call(system, "/readyz"))[0] != 500 and time.monotonic() < deadline:
        assert answer[3] < 1.0
        time.sleep(0.2)
    assert answer[0] == 500 and answer[3] < 1.0


def _assert_backs_off(system: System, killed: str) -> None:
    """The registry's own watchers (its controllers' reflectors) wait a backoff
    while the cacher is away: before, each reopened its watch at once, and the
    registry logged thousands of broken storage streams a second."""
    if killed != "cacher":
        return
    log = system.home / "logs" / "registry.log"
    before = log.read_text().count("storage watch stream broke")
    time.sleep(3)
    broke = log.read_text().count("storage watch stream broke") - before
    assert broke < 300, broke


@pytest.mark.parametrize(
    ("killed", "message"),
    [("cacher", "storage is unavailable"), ("registry", "registry unavailable")],
)
def test_a_watch_while_a_dependency_is_away_is_503(
    system: System, killed: str, message: str
) -> None:
    assert _call(system, WATCH)[0] == 200
    process = system.process(killed)
    process.kill()
    process.wait()
    try:
        # The first watches may still meet a stream that was open when the
        # process died, and end with it (a 503, or, started just before the
        # registry saw its storage stream break, a 200 with no event).
        for _ in range(3):
            status, _, body, _ = _call(system, WATCH)
            assert status == 503 or (status, body) == (200, b""), (status, body)
        _assert_unavailable(system, WATCH, message)
        _assert_unavailable(system, LIST, message)
        _assert_write_not_retried(system, message)
        _assert_live(system)
        _assert_backs_off(system, killed)
    finally:
        system.stop_one(killed)
        system.start_one(killed)
    assert _until_status(system, WATCH, 200) < 10.0
    assert _call(system, LIST)[0] == 200
