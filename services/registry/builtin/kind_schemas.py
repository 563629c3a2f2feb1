"""OpenAPI v3 schemas of the built-in kinds: what the registry keeps of a
request's object (a field they do not describe is dropped and reported as
fieldValidation asks, as kube's decoder drops what its Go types lack) and what
the gateway publishes under /openapi/v3. Parts strata does not describe field
by field say so with x-kubernetes-preserve-unknown-fields, and keep everything."""

from __future__ import annotations

from strata.api.schemas import (
    BOOLEAN,
    INTEGER,
    LONG,
    OBJECT_META,
    OPEN,
    STRING,
    STRING_MAP,
    TIME,
    Schema,
    array,
    merged,
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
CONDITIONS = merged(OPEN, "type")

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
    secrets=merged(OBJECT_REFERENCE, "name"),
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
INT_OR_STRING: Schema = {"x-kubernetes-int-or-string": True}
STRINGS = array(STRING)
OPEN_ITEMS = array(OPEN)
SERVICE = obj(
    "A named set of endpoints and the policy to reach them.",
    spec=obj(
        type=STRING,
        selector=STRING_MAP,
        ports=merged(
            obj(
                name=STRING,
                protocol={**STRING, "default": "TCP"},
                appProtocol=STRING,
                port=INTEGER,
                targetPort=INT_OR_STRING,
                nodePort=INTEGER,
            ),
            "port",
            "port",
            "protocol",
        ),
        clusterIP=STRING,
        clusterIPs=STRINGS,
        externalIPs=STRINGS,
        sessionAffinity=STRING,
        sessionAffinityConfig=OPEN,
        loadBalancerIP=STRING,
        loadBalancerSourceRanges=STRINGS,
        loadBalancerClass=STRING,
        allocateLoadBalancerNodePorts=BOOLEAN,
        externalName=STRING,
        externalTrafficPolicy=STRING,
        internalTrafficPolicy=STRING,
        healthCheckNodePort=INTEGER,
        publishNotReadyAddresses=BOOLEAN,
        ipFamilies=STRINGS,
        ipFamilyPolicy=STRING,
        trafficDistribution=STRING,
    ),
    status=OPEN,
)
_ADDRESS = obj(ip=STRING, hostname=STRING, nodeName=STRING, targetRef=OBJECT_REFERENCE)
ENDPOINTS = obj(
    "The addresses a service resolves to.",
    subsets=array(
        obj(
            addresses=array(_ADDRESS),
            notReadyAddresses=array(_ADDRESS),
            ports=array(obj(name=STRING, port=INTEGER, protocol=STRING, appProtocol=STRING)),
        )
    ),
)
# kube's LabelSelector is one atomic value (+structType=atomic): server-side
# apply owns and replaces it whole (f:selector: {}).
LABEL_SELECTOR = {
    **obj(
        matchLabels=STRING_MAP,
        matchExpressions=array(obj(key=STRING, operator=STRING, values=STRINGS)),
    ),
    "x-kubernetes-map-type": "atomic",
}
CONTAINER = obj(
    name=STRING,
    image=STRING,
    command=STRINGS,
    args=STRINGS,
    workingDir=STRING,
    ports=merged(
        obj(
            name=STRING,
            hostPort=INTEGER,
            containerPort=INTEGER,
            protocol={**STRING, "default": "TCP"},
            hostIP=STRING,
        ),
        "containerPort",
        "containerPort",
        "protocol",
    ),
    envFrom=OPEN_ITEMS,
    env=merged(obj(name=STRING, value=STRING, valueFrom=OPEN), "name"),
    resources=OPEN,
    resizePolicy=OPEN_ITEMS,
    restartPolicy=STRING,
    volumeMounts=merged(OPEN, "mountPath"),
    volumeDevices=OPEN_ITEMS,
    livenessProbe=OPEN,
    readinessProbe=OPEN,
    startupProbe=OPEN,
    lifecycle=OPEN,
    terminationMessagePath=STRING,
    terminationMessagePolicy=STRING,
    imagePullPolicy=STRING,
    securityContext=OPEN,
    stdin=BOOLEAN,
    stdinOnce=BOOLEAN,
    tty=BOOLEAN,
)
POD_SPEC = obj(
    containers=merged(CONTAINER, "name"),
    initContainers=merged(CONTAINER, "name"),
    ephemeralContainers=OPEN_ITEMS,
    volumes=merged(OPEN, "name"),
    restartPolicy=STRING,
    terminationGracePeriodSeconds=LONG,
    activeDeadlineSeconds=LONG,
    dnsPolicy=STRING,
    dnsConfig=OPEN,
    nodeSelector=STRING_MAP,
    serviceAccountName=STRING,
    serviceAccount=STRING,
    automountServiceAccountToken=BOOLEAN,
    nodeName=STRING,
    hostNetwork=BOOLEAN,
    hostPID=BOOLEAN,
    hostIPC=BOOLEAN,
    hostUsers=BOOLEAN,
    shareProcessNamespace=BOOLEAN,
    securityContext=OPEN,
    imagePullSecrets=merged(obj(name=STRING), "name"),
    hostname=STRING,
    subdomain=STRING,
    setHostnameAsFQDN=BOOLEAN,
    affinity=OPEN,
    schedulerName=STRING,
    tolerations=OPEN_ITEMS,
    hostAliases=OPEN_ITEMS,
    priorityClassName=STRING,
    priority=INTEGER,
    preemptionPolicy=STRING,
    readinessGates=OPEN_ITEMS,
    runtimeClassName=STRING,
    enableServiceLinks=BOOLEAN,
    overhead=OPEN,
    topologySpreadConstraints=OPEN_ITEMS,
    os=OPEN,
    schedulingGates=OPEN_ITEMS,
    resourceClaims=OPEN_ITEMS,
    resources=OPEN,
)
DEPLOYMENT = obj(
    "Declarative updates for a set of replicated pods.",
    spec=obj(
        replicas=INTEGER,
        selector=LABEL_SELECTOR,
        template=obj(metadata=OBJECT_META, spec=POD_SPEC),
        strategy=obj(
            type=STRING,
            rollingUpdate=obj(maxUnavailable=INT_OR_STRING, maxSurge=INT_OR_STRING),
        ),
        minReadySeconds=INTEGER,
        revisionHistoryLimit=INTEGER,
        paused=BOOLEAN,
        progressDeadlineSeconds=INTEGER,
    ),
    status=obj(
        observedGeneration=LONG,
        replicas=INTEGER,
        updatedReplicas=INTEGER,
        readyReplicas=INTEGER,
        availableReplicas=INTEGER,
        unavailableReplicas=INTEGER,
        terminatingReplicas=INTEGER,
        collisionCount=INTEGER,
        conditions=CONDITIONS,
    ),
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
