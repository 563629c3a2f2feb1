"""kube's audit filters: every response says which request it answers (its
Audit-ID), and, when an audit policy is given, each request the policy audits
is written to the audit log at each of its stages (services/gateway/audit/).

The steps, in kube's places in the chain:
- received, before authentication (kube's request-received timestamp and
  WithFailedAuthenticationAudit): notes when the request came in, and audits
  a request that failed authentication, in one ResponseStarted event with no
  user;
- audit, right after authentication (kube's WithAudit), so that the user is
  known: RequestReceived before the steps after it, ResponseComplete at the
  end (Panic for a bug), with the response's Status;
- objects, last before the handler: the request's object and the handler's
  JSON answer, for the levels that log them, as the handler read and wrote
  them (before output negotiation turns the answer into YAML or indents it);
- the audit_id response hook, which also sends a long-running request's
  ResponseStarted when its response starts."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import yaml
from aiohttp import web

from services.gateway import negotiation, user, yaml_bodies
from services.gateway.audit import AUDIT, Auditor, Level, RequestAudit, audit_id_of, events
from services.gateway.audit.auditor import RECEIVED
from services.gateway.audit.policy import (
    PANIC,
    REQUEST_RECEIVED,
    RESPONSE_COMPLETE,
    RESPONSE_STARTED,
)
from services.gateway.chain import status
from services.gateway.chain.authorization import attributes_of
from services.gateway.chain.metrics import labels_of
from strata.api import key_order
from strata.api.errors import StatusError

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# A JSON body that is a Status (compact or indented): its fields go in the event.
_STATUS = re.compile(rb'\{\s*"kind":\s*"Status"')
_WITH_OBJECT = frozenset({"create", "update"})
_DELETES = frozenset({"delete", "deletecollection"})
_WITH_BODY = _WITH_OBJECT | _DELETES | {"patch"}
# DeleteOptions' fields in the Go struct's order.
_DELETE_OPTIONS = (
    "gracePeriodSeconds",
    "preconditions",
    "orphanDependents",
    "propagationPolicy",
    "dryRun",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
)


async def audit_id(request: web.Request, response: web.StreamResponse) -> None:
    """on_response_prepare: every response, streamed ones included, says which
    request it answers (the client's Audit-ID, or a new one); a long-running
    request's ResponseStarted is sent as its response starts."""
    response.headers.setdefault("Audit-ID", audit_id_of(request))
    audit = request.get(AUDIT)
    if audit is not None and not audit.started and labels_of(request).long_running:
        audit.started = True
        audit.response_status = {"metadata": {}, "code": response.status}
        audit.emit(RESPONSE_STARTED)


class AuditSteps:
    """The audit steps of the chain, for one Auditor."""

    def __init__(self, auditor: Auditor) -> None:
        self.auditor = auditor

    @web.middleware
    async def received(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Before authentication: when the request came, and a 401's event."""
        request[RECEIVED] = time.time()
        try:
            return await handler(request)
        except StatusError as e:
            if e.code == 401 and AUDIT not in request:
                self._unauthenticated(request, e)
            raise

    def _unauthenticated(self, request: web.Request, error: StatusError) -> None:
        audit = self.auditor.begin(request, attributes_of(request), None)
        if audit is None:
            return
        body = error.status()
        audit.response_status = events.response_status(body, error.code)
        if audit.level >= Level.REQUEST_RESPONSE:
            audit.response_object = error.to_json()
        audit.emit(RESPONSE_STARTED)

    @web.middleware
    async def audit(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """After authentication: the request's events from RequestReceived on."""
        audit = self.auditor.begin(request, attributes_of(request), user.of(request))
        if audit is None:
            return await handler(request)
        request[AUDIT] = audit
        audit.emit(REQUEST_RECEIVED)
        panics: list[Exception] = []

        async def guarded(request: web.Request) -> web.StreamResponse:
            try:
                return await handler(request)
            except (StatusError, web.HTTPException):
                raise
            except Exception as e:
                panics.append(e)
                raise

        # Refusals rendered here, as the Status chain step renders them, so
        # that the event has the Status the client gets.
        try:
            response = await status.render_status(request, guarded)
        except asyncio.CancelledError:
            _closed_early(audit, labels_of(request).long_running)
            raise
        except web.HTTPException as e:
            _complete(audit, e.status, None, labels_of(request).long_running)
            raise
        if panics:
            audit.response_status = {
                "metadata": {},
                "status": "Failure",
                "message": f"APIServer panic'd: {panics[0]}",
                "reason": "InternalError",
                "code": 500,
            }
            audit.emit(PANIC)
        else:
            _complete(audit, response.status, response, labels_of(request).long_running)
        return response

    @web.middleware
    async def objects(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Before the handler: the objects a resource request's events log."""
        audit = request.get(AUDIT)
        if audit is None or audit.ref is None:
            return await handler(request)
        if request.body_exists and audit.verb in _WITH_BODY:
            await _request_object(request, audit)
        response = await handler(request)
        body = _json_body(response)
        if body is not None:
            if _STATUS.match(body):  # a Status answered, as a delete answers
                audit.response_status = events.response_status(orjson.loads(body), response.status)
            if audit.level >= Level.REQUEST_RESPONSE:
                audit.response_object = body
        return response


def _json_body(response: web.StreamResponse) -> bytes | None:
    if not isinstance(response, web.Response) or response.content_type != "application/json":
        return None
    body = response.body
    return body if isinstance(body, bytes) and body else None


def _complete(
    audit: RequestAudit, code: int, response: web.StreamResponse | None, long_running: bool
) -> None:
    """ResponseComplete, with the Status answered if the answer is one (and a
    ResponseStarted first for a long-running request answered unstreamed)."""
    if audit.response_status is None:
        body = None if response is None else _json_body(response)
        if body is not None and _STATUS.match(body):
            answered = orjson.loads(body)
            audit.response_status = events.response_status(answered, code)
            if audit.level >= Level.REQUEST_RESPONSE:
                audit.response_object = orjson.dumps(answered)
        else:
            audit.response_status = {"metadata": {}, "code": code}
    if long_running and not audit.started:
        audit.started = True
        audit.emit(RESPONSE_STARTED)
    audit.emit(RESPONSE_COMPLETE)


def _closed_early(audit: RequestAudit, long_running: bool) -> None:
    """The request was cancelled (its client left): kube's events for a
    request that ends with nothing written."""
    if audit.response_status is None:
        audit.response_status = events.CLOSED_EARLY
        if long_running and not audit.started:
            audit.started = True
            audit.emit(RESPONSE_STARTED)
    audit.emit(RESPONSE_COMPLETE)


async def _request_object(request: web.Request, audit: RequestAudit) -> None:
    """What kube's handlers log of a request's body: a patch as sent (a YAML
    one as JSON), a delete's DeleteOptions, a create's or update's object,
    whose metadata also completes the object reference at any level. A body
    that cannot be read is left to the handler to refuse."""
    body = await request.read()
    if not body:
        return
    content_type = request.headers.get("Content-Type", "")
    try:
        if audit.verb == "patch":
            if audit.level >= Level.REQUEST:
                audit.request_object = await _patch(content_type, body)
            return
        obj = orjson.loads((await negotiation.body_as_json(content_type, body)).json)
    except (StatusError, orjson.JSONDecodeError, orjson.JSONEncodeError, yaml.YAMLError):
        return
    if not isinstance(obj, dict):
        return
    if audit.verb in _DELETES:
        if audit.level >= Level.REQUEST:
            # kube logs DeleteOptions decoded into its internal version.
            options = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/__internal"}
            audit.request_object = options | {k: obj[k] for k in _DELETE_OPTIONS if k in obj}
        return
    if audit.ref is not None:
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            for key in ("namespace", "name", "uid", "resourceVersion"):
                if not audit.ref.get(key) and isinstance(meta.get(key), str):
                    audit.ref[key] = meta[key]
    if audit.level >= Level.REQUEST:
        audit.request_object = key_order.built_in(obj)


async def _patch(content_type: str, body: bytes) -> Any:
    """A patch's body as JSON (an apply's YAML converted)."""
    if "yaml" in content_type:
        converted, _ = await asyncio.to_thread(yaml_bodies.to_json, body)
        return orjson.loads(converted)
    return orjson.loads(body)
