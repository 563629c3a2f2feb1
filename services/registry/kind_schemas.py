"""OpenAPI v3 schemas of the built-in kinds, as the gateway publishes them under
/openapi/v3 (apiVersion, kind and metadata, which every kind has, are added
there). Fields strata does not describe in full say so with
x-kubernetes-preserve-unknown-fields."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

STRING: Schema = {"type": "string"}
BOOLEAN: Schema = {"type": "boolean"}
INTEGER: Schema = {"type": "integer", "format": "int32"}
LONG: Schema = {"type": "integer", "format": "int64"}
TIME: Schema = {"type": "string", "format": "date-time"}
STRING_MAP: Schema = {"type": "object", "additionalProperties": STRING}
BYTES_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}}
OPEN: Schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def obj(description: str = "", /, **properties: Schema) -> Schema:
    schema: Schema = {"type": "object", "properties": properties}
    if description:
        schema["description"] = description
    return schema


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


def kind(description: str, /, **properties: Schema) -> Schema:
    return obj(description, **properties)


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

NAMESPACE = kind(
    "A scope for names; deleting it deletes everything in it.",
    spec=obj(finalizers=array(STRING)),
    status=obj(phase=STRING, conditions=CONDITIONS),
)
CONFIG_MAP = kind(
    "Configuration data for others to read.",
    data=STRING_MAP,
    binaryData=BYTES_MAP,
    immutable=BOOLEAN,
)
SECRET = kind(
    "Secret data, base64-encoded, by key.",
    data=BYTES_MAP,
    stringData=STRING_MAP,
    type=STRING,
    immutable=BOOLEAN,
)
SERVICE_ACCOUNT = kind(
    "An identity for processes.",
    secrets=array(OBJECT_REFERENCE),
    imagePullSecrets=array(obj(name=STRING)),
    automountServiceAccountToken=BOOLEAN,
)
LEASE = kind(
    "A lease on a name, held by one holder at a time.",
    spec=obj(
        holderIdentity=STRING,
        leaseDurationSeconds=INTEGER,
        acquireTime={"type": "string", "format": "date-time"},
        renewTime={"type": "string", "format": "date-time"},
        leaseTransitions=INTEGER,
        strategy=STRING,
        preferredHolder=STRING,
    ),
)
EVENT = kind(
    "A report of something that happened to an object.",
    involvedObject=OBJECT_REFERENCE,
    reason=STRING,
    message=STRING,
    source=obj(component=STRING, host=STRING),
    firstTimestamp=TIME,
    lastTimestamp=TIME,
    count=INTEGER,
    type=STRING,
    eventTime={"type": "string", "format": "date-time"},
    series=obj(count=INTEGER, lastObservedTime=TIME),
    action=STRING,
    related=OBJECT_REFERENCE,
    reportingComponent=STRING,
    reportingInstance=STRING,
)
SERVICE = kind(
    "A named set of endpoints and the policy to reach them.",
    spec=OPEN,
    status=OPEN,
)
ENDPOINTS = kind("The addresses a service resolves to.", subsets=array(OPEN))
DEPLOYMENT = kind(
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
ROLE = kind("Namespaced permissions.", rules=array(_POLICY_RULE))
CLUSTER_ROLE = kind(
    "Cluster-wide permissions, possibly gathered from other ClusterRoles.",
    rules=array(_POLICY_RULE),
    aggregationRule=obj(clusterRoleSelectors=array(OPEN)),
)
_BINDING = {
    "subjects": array(obj(kind=STRING, apiGroup=STRING, name=STRING, namespace=STRING)),
    "roleRef": obj(apiGroup=STRING, kind=STRING, name=STRING),
}
ROLE_BINDING = kind("Grants a role's permissions in a namespace.", **_BINDING)
CLUSTER_ROLE_BINDING = kind("Grants a ClusterRole's permissions everywhere.", **_BINDING)
CUSTOM_RESOURCE_DEFINITION = kind(
    "A resource served from its definition.",
    spec=OPEN,
    status=OPEN,
)
