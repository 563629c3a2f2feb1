"""OpenAPI v3 schemas of the built-in kinds: what the registry keeps of a
request's object (a field they do not describe is dropped and reported as
fieldValidation asks, as kube's decoder drops what its Go types lack) and what
the gateway publishes under /openapi/v3. Parts strata does not describe field
by field say so with x-kubernetes-preserve-unknown-fields, and keep everything."""

from __future__ import annotations

from strata.api.schemas import (
    BOOLEAN,
    INTEGER,
    OPEN,
    STRING,
    STRING_MAP,
    TIME,
    Schema,
    array,
    obj,
)

BYTES_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}}
OBJECT_REFERENCE = obj(
    apiVersion=STRING,
    kind=STRING,
    name=STRING,
    namespace=STRING,
    uid=STRING,
    resourceVersion=STRING,
    fieldPath=STRING,
)
CONDITIONS = array(OPEN)

NAMESPACE = obj(
    "A scope for names; deleting it deletes everything in it.",
    spec=obj(finalizers=array(STRING)),
    status=obj(phase=STRING, conditions=CONDITIONS),
)
CONFIG_MAP = obj(
    "Configuration data for others to read.",
    data=STRING_MAP,
    binaryData=BYTES_MAP,
    immutable=BOOLEAN,
)
SECRET = obj(
    "Secret data, base64-encoded, by key.",
    data=BYTES_MAP,
    stringData=STRING_MAP,
    type=STRING,
    immutable=BOOLEAN,
)
SERVICE_ACCOUNT = obj(
    "An identity for processes.",
    secrets=array(OBJECT_REFERENCE),
    imagePullSecrets=array(obj(name=STRING)),
    automountServiceAccountToken=BOOLEAN,
)
LEASE = obj(
    "A lease on a name, held by one holder at a time.",
    spec=obj(
        holderIdentity=STRING,
        leaseDurationSeconds=INTEGER,
        acquireTime=TIME,
        renewTime=TIME,
        leaseTransitions=INTEGER,
        strategy=STRING,
        preferredHolder=STRING,
    ),
)
EVENT = obj(
    "A report of something that happened to an object.",
    involvedObject=OBJECT_REFERENCE,
    reason=STRING,
    message=STRING,
    source=obj(component=STRING, host=STRING),
    firstTimestamp=TIME,
    lastTimestamp=TIME,
    count=INTEGER,
    type=STRING,
    eventTime=TIME,
    series=obj(count=INTEGER, lastObservedTime=TIME),
    action=STRING,
    related=OBJECT_REFERENCE,
    reportingComponent=STRING,
    reportingInstance=STRING,
)
SERVICE = obj(
    "A named set of endpoints and the policy to reach them.",
    spec=OPEN,
    status=OPEN,
)
ENDPOINTS = obj("The addresses a service resolves to.", subsets=array(OPEN))
DEPLOYMENT = obj(
    "Declarative updates for a set of replicated pods.",
    spec=OPEN,
    status=OPEN,
)
_POLICY_RULE = obj(
    verbs=array(STRING),
    apiGroups=array(STRING),
    resources=array(STRING),
    resourceNames=array(STRING),
    nonResourceURLs=array(STRING),
)
ROLE = obj("Namespaced permissions.", rules=array(_POLICY_RULE))
CLUSTER_ROLE = obj(
    "Cluster-wide permissions, possibly gathered from other ClusterRoles.",
    rules=array(_POLICY_RULE),
    aggregationRule=obj(clusterRoleSelectors=array(OPEN)),
)
_BINDING = {
    "subjects": array(obj(kind=STRING, apiGroup=STRING, name=STRING, namespace=STRING)),
    "roleRef": obj(apiGroup=STRING, kind=STRING, name=STRING),
}
ROLE_BINDING = obj("Grants a role's permissions in a namespace.", **_BINDING)
CLUSTER_ROLE_BINDING = obj("Grants a ClusterRole's permissions everywhere.", **_BINDING)
CUSTOM_RESOURCE_DEFINITION = obj(
    "A resource served from its definition.",
    spec=OPEN,
    status=OPEN,
)
