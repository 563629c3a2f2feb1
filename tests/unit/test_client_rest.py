"""The REST client against a small HTTP server on loopback: a 429 is retried
after its Retry-After (any method: the server did no work), a write that fails
otherwise is not, and a read after a 503 asking to retry is."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from strata.client import Config, InternalError, RestClient, TooManyRequests

STATUS = '{{"kind": "Status", "code": {code}, "reason": "{reason}", "message": "m"}}'


Served = tuple[TestServer, list[str], dict[str, list[web.Response]]]


@pytest.fixture
async def server() -> AsyncIterator[Served]:
    """A server answering each path from its queue of answers (then 200), and
    the methods it was asked with."""
    seen: list[str] = []
    answers: dict[str, list[web.Response]] = {}

    async def handle(request: web.Request) -> web.Response:
        seen.append(request.method)
        queue = answers.get(request.path) or []
        return queue.pop(0) if queue else web.json_response({"ok": True})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    test_server = TestServer(app, host="127.0.0.1")
    await test_server.start_server()
    yield test_server, seen, answers
    await test_server.close()


def failure(code: int, reason: str, **headers: str) -> web.Response:
    return web.Response(
        status=code,
        text=STATUS.format(code=code, reason=reason),
        content_type="application/json",
        headers=headers,
    )


async def test_retries_only_where_safe(server: Served) -> None:
    test_server, seen, answers = server
    config = Config(server=str(test_server.make_url("")).rstrip("/"))
    async with RestClient(config, max_retries=3) as rest:
        answers["/busy"] = [failure(429, "TooManyRequests", **{"Retry-After": "0"})]
        assert await rest.request("POST", "/busy", body={}) == {"ok": True}
        assert seen == ["POST", "POST"]
        seen.clear()
        answers["/broken"] = [failure(500, "InternalError")]
        with pytest.raises(InternalError):
            await rest.request("POST", "/broken", body={})
        assert seen == ["POST"]
        seen.clear()
        answers["/later"] = [failure(503, "ServiceUnavailable", **{"Retry-After": "0"})]
        assert await rest.request("GET", "/later") == {"ok": True}
        assert seen == ["GET", "GET"]
        seen.clear()
        answers["/always-busy"] = [
            failure(429, "TooManyRequests", **{"Retry-After": "0"}) for _ in range(5)
        ]
        with pytest.raises(TooManyRequests) as busy:
            await rest.request("GET", "/always-busy")
        assert busy.value.retry_after_seconds == 0 and seen == ["GET"] * 4
