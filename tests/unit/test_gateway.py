"""Gateway pieces that need no server: path parsing, negotiation, protobuf bodies."""

from __future__ import annotations

import orjson
import pytest

from services.gateway import kubeproto, negotiation, paths, responses
from strata.api.errors import StatusError
from strata.proto.k8s import apps_v1_pb2, core_v1_pb2, meta_v1_pb2, runtime_pb2


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/api/v1", paths.RequestInfo(group="", version="v1")),
        ("/api/v1/namespaces", paths.RequestInfo(group="", version="v1", resource="namespaces")),
        (
            "/api/v1/namespaces/demo",
            paths.RequestInfo(group="", version="v1", resource="namespaces", name="demo"),
        ),
        (
            "/api/v1/namespaces/demo/status",
            paths.RequestInfo(
                group="", version="v1", resource="namespaces", name="demo", subresource="status"
            ),
        ),
        (
            "/api/v1/namespaces/demo/configmaps/a",
            paths.RequestInfo(
                group="", version="v1", resource="configmaps", namespace="demo", name="a"
            ),
        ),
        (
            "/apis/apps/v1/watch/namespaces/x/deployments",
            paths.RequestInfo(
                group="apps",
                version="v1",
                resource="deployments",
                namespace="x",
                watch_path=True,
            ),
        ),
        ("/api", None),
        ("/apis", None),
        # A group's own discovery (its APIGroup).
        ("/apis/apps", paths.RequestInfo(group="apps", version="")),
        ("/apis/apps/", paths.RequestInfo(group="apps", version="")),
        ("/healthz", None),
        ("/api/v1/a/b/c/d", None),
        # As kube splits a path: slashes at the ends do not count, one between
        # two others is an empty part that matches nothing.
        ("/api/v1/namespaces//", paths.RequestInfo(group="", version="v1", resource="namespaces")),
        ("/api//v1", None),
        ("/api/v1//namespaces", None),
    ],
)
def test_request_info(path: str, expected: paths.RequestInfo | None) -> None:
    assert paths.parse(path) == expected


@pytest.mark.parametrize(
    ("path", "json"),
    [
        ("/api/foo", True),
        ("/version/x", True),
        ("/apis/apps/v2", True),
        ("/apis/foo/v1", False),
        ("/apis//", False),
        ("//version", False),
        ("/healthz/", False),
    ],
)
def test_which_404s_are_a_status(path: str, json: bool) -> None:
    """kube's REST container answers a Status, Go's mux the plain text."""
    assert paths.json_prefixed(path, {"apps": ["v1"]}) is json


KUBECTL_TABLE_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,"
    "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


JSON, YAML = "application/json", "application/yaml"
TABLE_V1BETA1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
ONE_PARTIAL = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
PARTIAL_ACCEPT = (
    "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)


@pytest.mark.parametrize(
    ("accept", "listing", "expected"),
    [
        (KUBECTL_TABLE_ACCEPT, True, (JSON, "Table", "v1")),
        (TABLE_V1BETA1, False, (JSON, "Table", "v1beta1")),
        (JSON, False, (JSON, "", "v1")),
        ("", True, (JSON, "", "v1")),
        ("*/*", False, (JSON, "", "v1")),
        (YAML, False, (YAML, "", "v1")),
        ("application/vnd.kubernetes.protobuf,application/json", False, (JSON, "", "v1")),
        (PARTIAL_ACCEPT, True, (JSON, "PartialObjectMetadataList", "v1")),
        # One object cannot be a list: the next clause answers.
        (PARTIAL_ACCEPT, False, (JSON, "", "v1")),
        (ONE_PARTIAL, False, (JSON, "PartialObjectMetadata", "v1")),
        ("application/json;as=Table;v=v2;g=meta.k8s.io,application/yaml", True, (YAML, "", "v1")),
    ],
)  # fmt: skip
def test_output_negotiation(accept: str, listing: bool, expected: tuple[str, str, str]) -> None:
    out = negotiation.output(accept, listing=listing)
    assert (out.media, out.transform, out.version) == expected


ROUTE_406 = "406: Not Acceptable\n\nAvailable representations: "
ONE = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
STREAMS = f"{ONE}, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
ONLY = f"only the following media types are accepted: {ONE}"
TABLE_V2 = "application/json;as=Table;g=meta.k8s.io;v=v2"


# kube-apiserver v1.36's 406s for these Accept headers (a GET of a ConfigMap, or
# of the collection: streams), recorded: go-restful's when no media type is one
# the route produces (no wildcard but */*, no case folding, no +json), with
# empty details; kube's own, with none, when one is but nothing it names is
# written; the Status indented unless a clause could carry it (application/*).
@pytest.mark.parametrize(
    ("accept", "streams", "message", "bare", "writable"),
    [
        ("application/bogus", False, ROUTE_406 + ONE, False, False),
        ("application/bogus", True, ROUTE_406 + STREAMS, False, False),
        ("application/xml", True, ROUTE_406 + STREAMS, False, False),
        ("text/plain", True, ROUTE_406 + STREAMS, False, False),
        ("text/*", False, ROUTE_406 + ONE, False, False),
        ("application/*", True, ROUTE_406 + STREAMS, False, True),
        ("APPLICATION/JSON", False, ROUTE_406 + ONE, False, False),
        ("application/foo+json", False, ROUTE_406 + ONE, False, False),
        ("application/json;as=Foo", True, ONLY, True, False),
        ("application/json;as=Table;g=meta.k8s.io;v=v9", True, ONLY, True, False),
        (f"{TABLE_V2},application/bogus", False, ONLY, True, False),
        (f"application/bogus, {TABLE_V2}", True, ONLY, True, False),
        ("*/*;as=Table;g=meta.k8s.io;v=v2", False, ONLY, True, False),
    ],
)  # fmt: skip
def test_nothing_acceptable_is_kubes_406(
    accept: str, streams: bool, message: str, bare: bool, writable: bool
) -> None:
    with pytest.raises(StatusError) as raised:
        negotiation.output(accept, listing=streams, streams=streams)
    error = raised.value
    assert (error.code, error.reason, error.message) == (406, "NotAcceptable", message)
    assert ("details" not in error.status()) == bare
    assert negotiation.status_writable(accept) == writable


@pytest.mark.parametrize(
    "accept", [" application/json", "application/json;q=0", "application/json;stream=watch"]
)
def test_what_go_restful_takes_is_json(accept: str) -> None:
    """kube answers these 200 JSON (go-restful trims, and reads no q-values)."""
    assert negotiation.output(accept, streams=True) == negotiation.Output()


def test_protobuf_alone_is_406() -> None:
    """kube writes protobuf; the gateway does not (it reads it), so a client
    that takes nothing else gets kube's own 406."""
    with pytest.raises(StatusError) as raised:
        negotiation.output("application/vnd.kubernetes.protobuf", listing=True)
    assert raised.value.message == ONLY


@pytest.mark.parametrize(
    ("accept", "version"),
    [
        (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
            "application/json",
            "v2",
        ),
        ("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", "v2beta1"),
        (
            "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            "",
        ),
        (
            "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json",
            "",
        ),
        ("", ""),
    ],
)
def test_aggregated_discovery_when_asked_first(accept: str, version: str) -> None:
    assert negotiation.aggregated_discovery(accept) == version


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    unknown = runtime_pb2.Unknown(
        typeMeta=runtime_pb2.TypeMeta(apiVersion=api_version, kind=kind), raw=raw
    )
    return kubeproto.MAGIC + unknown.SerializeToString()


def test_protobuf_configmap_becomes_kubernetes_json() -> None:
    message = core_v1_pb2.ConfigMap(
        metadata=meta_v1_pb2.ObjectMeta(
            name="a",
            namespace="",  # gogo-protobuf writes empty strings; JSON omits them
            labels={"app": "web"},
            creationTimestamp=meta_v1_pb2.Time(seconds=-62135596800),
        ),
        data={"k": "v"},
        binaryData={"b": b"\x00\x01"},
    )
    body = _envelope("v1", "ConfigMap", message.SerializeToString())
    assert orjson.loads(kubeproto.to_json(body)) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a", "labels": {"app": "web"}},
        "data": {"k": "v"},
        "binaryData": {"b": "AAE="},
    }


def test_protobuf_times_and_lists() -> None:
    message = core_v1_pb2.Namespace(
        metadata=meta_v1_pb2.ObjectMeta(
            name="n", creationTimestamp=meta_v1_pb2.Time(seconds=1700000000)
        ),
        spec=core_v1_pb2.NamespaceSpec(finalizers=["kubernetes"]),
    )
    converted = orjson.loads(
        kubeproto.to_json(_envelope("v1", "Namespace", message.SerializeToString()))
    )
    assert converted["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert converted["spec"] == {"finalizers": ["kubernetes"]}


def test_protobuf_deployment_keeps_chosen_zeroes_and_int_or_strings() -> None:
    message = apps_v1_pb2.Deployment(
        metadata=meta_v1_pb2.ObjectMeta(name="web"),
        spec=apps_v1_pb2.DeploymentSpec(
            replicas=0,  # a pointer: zero was asked for
            minReadySeconds=0,  # not a pointer: gogo writes it, JSON omits it
            selector=meta_v1_pb2.LabelSelector(matchLabels={"app": "web"}),
            strategy=apps_v1_pb2.DeploymentStrategy(
                rollingUpdate=apps_v1_pb2.RollingUpdateDeployment(
                    maxUnavailable=core_v1_pb2.IntOrString(type=1, strVal="50%"),
                    maxSurge=core_v1_pb2.IntOrString(type=0, intVal=0),
                )
            ),
            template=core_v1_pb2.PodTemplateSpec(
                # metav1.Time marshals its zero as an empty message.
                metadata=meta_v1_pb2.ObjectMeta(
                    labels={"app": "web"}, creationTimestamp=meta_v1_pb2.Time()
                ),
                spec=core_v1_pb2.PodSpec(
                    containers=[
                        core_v1_pb2.Container(
                            name="nginx",
                            image="nginx",
                            resources=core_v1_pb2.ResourceRequirements(
                                limits={"cpu": core_v1_pb2.Quantity(string="500m")}
                            ),
                        )
                    ]
                ),
            ),
        ),
    )
    body = _envelope("apps/v1", "Deployment", message.SerializeToString())
    assert orjson.loads(kubeproto.to_json(body))["spec"] == {
        "replicas": 0,
        "selector": {"matchLabels": {"app": "web"}},
        "strategy": {"rollingUpdate": {"maxUnavailable": "50%", "maxSurge": 0}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {"name": "nginx", "image": "nginx", "resources": {"limits": {"cpu": "500m"}}}
                ]
            },
        },
    }


def test_protobuf_of_unknown_type_and_garbage_are_400() -> None:
    with pytest.raises(StatusError) as raised:
        kubeproto.to_json(_envelope("apps/v1", "StatefulSet", b""), ("apps/v1", "Deployment"))
    assert raised.value.code == 400
    with pytest.raises(StatusError) as raised:
        kubeproto.to_json(b"not protobuf")
    assert raised.value.code == 400
    with pytest.raises(StatusError) as raised:
        kubeproto.to_json(kubeproto.MAGIC + b"\xff\xff\xff")
    assert raised.value.code == 400


@pytest.mark.parametrize(
    ("text", "header"),
    [
        ('unknown field "spec.x"', '299 - "unknown field \\"spec.x\\""'),
        ("back\\slash", '299 - "back\\\\slash"'),
        ("tab\there\nline", '299 - "tab\\there\\nline"'),
        ('unknown field "\x1f"', '299 - "unknown field \\"\\x1f\\""'),
        ("ünïcode ok", '299 - "ünïcode ok"'),
    ],
)
def test_warning_headers_quote_as_go_does(text: str, header: str) -> None:
    assert responses.warning_header(text) == header
