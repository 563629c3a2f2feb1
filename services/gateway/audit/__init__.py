"""kube's auditing in the gateway: the audit policy (policy.py), the events as
kube writes them (events.py), the log backend that writes them off the event
loop (log.py, with rotation.py), the Auditor that ties them together with
kube's audit metrics and each request's audit so far (auditor.py), and the
flags that turn it on (flags.py). The chain's audit step
(services/gateway/chain/audit.py) uses it for every request.

Apart from the chain, so that a step or handler that has something to add to
a request's events (an annotation, the impersonated user) can do it through
annotate, authorized and impersonated here without importing the chain."""

from services.gateway.audit.auditor import (
    AUDIT,
    AuditConfig,
    Auditor,
    RequestAudit,
    annotate,
    audit_id_of,
    authorization_failed,
    authorized,
    impersonated,
)
from services.gateway.audit.policy import Level, Policy, PolicyError

__all__ = [
    "AUDIT",
    "AuditConfig",
    "Auditor",
    "Level",
    "Policy",
    "PolicyError",
    "RequestAudit",
    "annotate",
    "audit_id_of",
    "authorization_failed",
    "authorized",
    "impersonated",
]
