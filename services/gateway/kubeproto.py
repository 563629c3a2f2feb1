"""Request bodies in Kubernetes protobuf ("application/vnd.kubernetes.protobuf").

kubectl sends built-in types as protobuf and, unlike for CBOR, client-go has
no fallback to JSON on 415 (kubernetes/kubernetes#86253), so the gateway must
read them. The body is the magic "k8s\\0" then a runtime.Unknown naming the
type; the inner message is turned into the same JSON a client would have sent.
Responses stay JSON, which every client accepts.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

import orjson
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from strata.api import errors
from strata.api.goquote import quote
from strata.proto.k8s import (
    apps_v1_pb2,
    authentication_v1_pb2,
    authorization_v1_pb2,
    core_v1_pb2,
    meta_v1_pb2,
    rbac_v1_pb2,
    runtime_pb2,
)

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
# Go's zero time.Time, which gogo-protobuf writes for an unset metav1.Time
# (metav1.Time's own Marshal writes nothing at all for it).
_GO_ZERO_TIME = -62135596800

_TYPES: dict[tuple[str, str], type[Message]] = {
    ("v1", "Namespace"): core_v1_pb2.Namespace,
    ("v1", "ConfigMap"): core_v1_pb2.ConfigMap,
    ("v1", "Secret"): core_v1_pb2.Secret,
    ("v1", "ServiceAccount"): core_v1_pb2.ServiceAccount,
    ("v1", "Service"): core_v1_pb2.Service,
    ("apps/v1", "Deployment"): apps_v1_pb2.Deployment,
    ("rbac.authorization.k8s.io/v1", "Role"): rbac_v1_pb2.Role,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): rbac_v1_pb2.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): rbac_v1_pb2.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): rbac_v1_pb2.ClusterRoleBinding,
    ("authentication.k8s.io/v1", "TokenRequest"): authentication_v1_pb2.TokenRequest,
    ("authentication.k8s.io/v1", "TokenReview"): authentication_v1_pb2.TokenReview,
    ("v1", "DeleteOptions"): meta_v1_pb2.DeleteOptions,
    **{
        ("authorization.k8s.io/v1", kind): getattr(authorization_v1_pb2, kind)
        for kind in (
            "SubjectAccessReview",
            "LocalSubjectAccessReview",
            "SelfSubjectAccessReview",
            "SelfSubjectRulesReview",
        )
    },
    ("meta.k8s.io/v1", "DeleteOptions"): meta_v1_pb2.DeleteOptions,
}

# Where kube's scheme for an endpoint's kind is defined, as its errors name it.
_LEGACY_SCHEME = "pkg/api/legacyscheme/scheme.go:30"
_SCHEMES = {
    "CustomResourceDefinition": "pkg/apiserver/apiserver.go:55",
    "DeleteOptions": "pkg/apis/meta/internalversion/scheme/register.go:27",
}
# What a DELETE's body is read as.
DELETE_OPTIONS = ("meta.k8s.io/v1", "DeleteOptions")


def _time(message: meta_v1_pb2.Time) -> str | None:
    if message.seconds == _GO_ZERO_TIME or not message.HasField("seconds"):
        return None
    return datetime.fromtimestamp(message.seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# Pointer fields (written only when set), whose zero is a value a client chose.
_ZERO_KEPT = frozenset(
    {
        "k8s.io.api.apps.v1.DeploymentSpec.replicas",
        "k8s.io.api.apps.v1.DeploymentSpec.revisionHistoryLimit",
        "k8s.io.api.apps.v1.DeploymentSpec.progressDeadlineSeconds",
        "k8s.io.api.core.v1.PodSpec.terminationGracePeriodSeconds",
        "k8s.io.api.core.v1.PodSpec.activeDeadlineSeconds",
    }
)

_INT_OR_STRING = core_v1_pb2.IntOrString.DESCRIPTOR


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    return value


def _message(message: Message) -> Any:
    if isinstance(message, meta_v1_pb2.Time):
        return _time(message)
    if isinstance(message, meta_v1_pb2.FieldsV1):
        return orjson.loads(message.Raw) if message.Raw else {}
    if isinstance(message, core_v1_pb2.IntOrString):
        return message.strVal if message.type == 1 else message.intVal
    if isinstance(message, core_v1_pb2.Quantity):
        return message.string
    if isinstance(message, authorization_v1_pb2.ExtraValue):
        return list(message.items)
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        converted: Any
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            converted = {
                k: _message(v) if value_field.message_type is not None else _scalar(value_field, v)
                for k, v in value.items()
            }
        elif field.is_repeated:
            converted = [
                _message(v) if field.message_type is not None else _scalar(field, v) for v in value
            ]
        elif field.message_type is not None:
            converted = _message(value)
        else:
            converted = _scalar(field, value)
        # gogo-protobuf writes every non-pointer field; JSON omits empty ones.
        # An IntOrString is a pointer too: present means set, 0 included.
        kept = field.full_name in _ZERO_KEPT or field.message_type is _INT_OR_STRING
        if converted in (None, "", 0, False, [], {}) and not kept:
            continue
        out[field.name] = converted
    return out


def _not_registered(api_version: str, kind: str, into: str) -> errors.StatusError:
    """kube's 400 for a type its scheme does not hold (the CRD API's scheme is
    the apiextensions server's own)."""
    scheme = _SCHEMES.get(into, _LEGACY_SCHEME)
    message = (
        f"no kind {quote(kind)} is registered for version {quote(api_version)} "
        f"in scheme {quote(scheme)}"
    )
    if into != DELETE_OPTIONS[1]:  # options are decoded without the handler's words
        version = api_version.rpartition("/")[2]
        message = f"{kind} in version {quote(version)} cannot be handled as a {into}: {message}"
    return errors.bad_request(message)


def to_json(body: bytes, into: tuple[str, str] = ("", "")) -> bytes:
    """The JSON for a protobuf-encoded object; into, the (apiVersion, kind) the
    request's endpoint decodes, stands for what the envelope leaves out (as
    kube's defaults do). A type strata cannot read gets kube's 400."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("protobuf body does not start with the Kubernetes magic number")
    envelope = runtime_pb2.Unknown()
    try:
        envelope.ParseFromString(body[len(MAGIC) :])
    except DecodeError as e:
        raise errors.bad_request(f"malformed protobuf envelope: {e}") from None
    api_version = envelope.typeMeta.apiVersion or into[0]
    kind = envelope.typeMeta.kind or into[1]
    message_type = _TYPES.get((api_version, kind))
    if message_type is None:
        raise _not_registered(api_version, kind, into[1])
    message = message_type()
    try:
        message.ParseFromString(envelope.raw)
    except DecodeError as e:
        raise errors.bad_request(f"malformed {kind} protobuf: {e}") from None
    obj = _message(message)
    return orjson.dumps({"apiVersion": api_version, "kind": kind, **obj})
