"""kube's audit id: every response, streamed ones and refusals included, says
which request it answers. A response hook rather than a middleware, so that
it reaches the answers of the steps in front of authentication too; audit
events themselves are not written yet."""

from __future__ import annotations

import uuid

from aiohttp import web


async def audit_id(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every response, streamed ones included, says which
    request it answers (the client's Audit-ID, or a new one)."""
    response.headers.setdefault("Audit-ID", request.headers.get("Audit-ID") or str(uuid.uuid4()))
