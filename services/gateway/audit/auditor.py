"""The gateway's auditing: the policy, the log backend and kube's audit
metrics together (Auditor), and what one request's audit has gathered so far
(RequestAudit, kube's AuditContext), kept on the request by the chain's audit
step. Each stage's event is a snapshot of it, handed to the backend's queue.

Steps after the audit step add to it through the request, without knowing
whether auditing is on: annotate (the authorization decision's annotations,
kube's AddAuditAnnotation) and impersonated (kube's LogImpersonatedUser)."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter

from services.gateway.audit import events
from services.gateway.audit.log import BUFFER_SIZE, LogBackend
from services.gateway.audit.policy import REQUEST_RECEIVED, Level, Policy, RequestConfig
from services.gateway.audit.rotation import Sink
from services.gateway.authorizers import Attributes
from services.gateway.user import User
from strata import telemetry

log = telemetry.get_logger("strata.gateway.audit")

DECISION = "authorization.k8s.io/decision"
REASON = "authorization.k8s.io/reason"
# How often a full queue is told in the log (each lost event is counted).
_DROP_LOG_SECONDS = 10.0


@dataclass(frozen=True)
class AuditConfig:
    """What --audit-policy-file and --audit-log-* make: the policy, where the
    lines go, and how many events may wait to be written."""

    policy: Policy
    sink: Sink
    buffer_size: int = BUFFER_SIZE


class Auditor:
    """Evaluates the policy for each request and sends its events to the log,
    counting them as kube's apiserver_audit_* metrics do."""

    def __init__(self, config: AuditConfig, registry: CollectorRegistry | None = None) -> None:
        self.policy = config.policy
        self._events = Counter(
            "apiserver_audit_event_total",
            "Counter of audit events generated and sent to the audit backend.",
            registry=registry,
        )
        self._errors = Counter(
            "apiserver_audit_error_total",
            "Counter of audit events that failed to be audited properly. Plugin identifies the "
            "plugin affected by the error.",
            ["plugin"],
            registry=registry,
        )
        levels = Counter(
            "apiserver_audit_level_total",
            "Counter of policy levels for audit events (1 per request).",
            ["level"],
            registry=registry,
        )
        self._levels = {level: levels.labels(level.word) for level in Level}
        self._backend = LogBackend(config.sink, buffer_size=config.buffer_size, failed=self._failed)
        self._dropped_logged = 0.0

    def _failed(self, plugin: str, count: int) -> None:
        self._errors.labels(plugin).inc(count)
        now = time.monotonic()
        if plugin == "buffered" and now - self._dropped_logged > _DROP_LOG_SECONDS:
            self._dropped_logged = now
            log.warning("audit buffer queue blocked: events dropped")

    async def start(self, _: web.Application) -> None:
        self._backend.start()

    async def close(self, _: web.Application) -> None:
        """Write what is queued (on_cleanup, after the last request)."""
        await asyncio.to_thread(self._backend.close)

    def begin(
        self, request: web.Request, attributes: Attributes, user: User | None
    ) -> RequestAudit | None:
        """The request's audit, or None when the policy's level for it is None."""
        config = self.policy.evaluate(attributes, user)
        self._levels[config.level].inc()
        if config.level is Level.NONE:
            return None
        return RequestAudit(
            auditor=self,
            config=config,
            audit_id=audit_id_of(request),
            uri=request.raw_path,
            verb=attributes.verb,
            user=events.user_info(user),
            source_ips=events.source_ips(request),
            user_agent=request.headers.get("User-Agent", ""),
            ref=events.object_ref(attributes),
            received=request.get(RECEIVED) or time.time(),
        )

    def send(self, event: events.Obj, omit_managed_fields: bool) -> None:
        if self._backend.process(event, omit_managed_fields):
            self._events.inc()


@dataclass(slots=True, kw_only=True)
class RequestAudit:
    """One request's audit so far; each stage's event is made from it."""

    auditor: Auditor
    config: RequestConfig
    audit_id: str
    uri: str
    verb: str
    user: events.Obj
    source_ips: list[str]
    user_agent: str
    # Completed by the request's object (a create's name) once read.
    ref: dict[str, str] | None
    received: float
    impersonated: events.Obj | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    response_status: events.Obj | None = None
    # Decoded JSON, or a body's JSON bytes.
    request_object: Any = None
    response_object: bytes | None = None
    # Whether ResponseStarted has been sent (long-running requests only).
    started: bool = False

    @property
    def level(self) -> Level:
        return self.config.level

    def emit(self, stage: str) -> None:
        """Send the event of stage, unless the policy omits it."""
        if stage in self.config.omit_stages:
            return
        now = self.received if stage == REQUEST_RECEIVED else time.time()
        self.auditor.send(self.event(stage, now), self.config.omit_managed_fields)

    def event(self, stage: str, now: float) -> events.Obj:
        """The event of stage as it stands, in the order kube writes its fields."""
        event: events.Obj = {
            **events.HEAD,
            "level": self.level.word,
            "auditID": self.audit_id,
            "stage": stage,
            "requestURI": self.uri,
            "verb": self.verb,
            "user": self.user,
        }
        if self.impersonated is not None:
            event["impersonatedUser"] = self.impersonated
        if self.source_ips:
            event["sourceIPs"] = self.source_ips
        if self.user_agent:
            event["userAgent"] = self.user_agent
        if self.ref is not None:
            event["objectRef"] = events.ordered_ref(self.ref)
        if self.response_status is not None:
            event["responseStatus"] = self.response_status
        if self.request_object is not None:
            event[events.REQUEST_OBJECT] = self.request_object
        if self.response_object is not None:
            event[events.RESPONSE_OBJECT] = self.response_object
        event["requestReceivedTimestamp"] = self.received
        event["stageTimestamp"] = now
        if self.annotations:
            event["annotations"] = dict(self.annotations)
        return event


# The request's audit, when it has one.
AUDIT = web.RequestKey("strata.audit", RequestAudit)
# When the request came in (time.time()), noted before authentication.
RECEIVED = web.RequestKey("strata.audit_received", float)
_AUDIT_ID = web.RequestKey("strata.audit_id", str)


def audit_id_of(request: web.Request) -> str:
    """The request's audit id: the client's Audit-ID, else a new one, the same
    for its events and its response's header."""
    found: str | None = request.get(_AUDIT_ID)
    if found is None:
        found = request[_AUDIT_ID] = request.headers.get("Audit-ID") or str(uuid.uuid4())
    return found


def annotate(request: web.Request, key: str, value: str) -> None:
    """Add an annotation to the request's audit events to come (the first
    value given for a key stays, as in kube); nothing if it is not audited."""
    audit = request.get(AUDIT)
    if audit is not None:
        audit.annotations.setdefault(key, value)


def authorized(request: web.Request, allowed: bool, reason: str) -> None:
    """The authorization step's decision, as kube's authorization filter
    annotates it."""
    annotate(request, DECISION, "allow" if allowed else "forbid")
    annotate(request, REASON, reason)


def authorization_failed(request: web.Request) -> None:
    """An authorizer's error kept the request from being decided (kube
    annotates only the reason then)."""
    annotate(request, REASON, "internal error")


def impersonated(request: web.Request, user: User) -> None:
    """Whom the request acts as, after impersonation (the event's user stays
    the one who authenticated)."""
    audit = request.get(AUDIT)
    if audit is not None:
        audit.impersonated = events.user_info(user)
