"""Content negotiation: what a request body is in, and what the response is
written as (JSON or YAML; the objects themselves, a meta.k8s.io Table or their
PartialObjectMetadata)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import orjson
import yaml

from services.gateway import kubeproto, yaml_bodies
from strata.api import errors

JSON, YAML = "application/json", "application/yaml"
_JSON_MEDIA = frozenset({JSON, "*/*", "application/*", ""})
TABLE = "Table"
PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
# What kube's resource routes produce, as its 406s list them: every route the
# three media types, a collection's GET and a watch path the two watch streams too.
REPRESENTATIONS = (JSON, YAML, "application/vnd.kubernetes.protobuf")
STREAMS = (
    *REPRESENTATIONS,
    f"{JSON};stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
)
# kube's output negotiation accepts these (with no "as") for a Status too.
_STATUS_MEDIA = frozenset({*REPRESENTATIONS, "*/*", "application/*"})


@dataclass(frozen=True)
class Output:
    """What a response is written as: a media type, and a meta.k8s.io form the
    objects take instead of themselves ("" for none)."""

    media: str = JSON
    transform: str = ""
    # The meta.k8s.io version the transform was asked at.
    version: str = "v1"


def _media_types(accept: str) -> list[str]:
    """Accept's media types without their parameters, as go-restful reads them."""
    return [clause.split(";", 1)[0].strip() for clause in accept.split(",")]


def route_accepts(accept: str, produces: tuple[str, ...]) -> bool:
    """Whether go-restful (kube's router) takes the request: a media type of
    Accept, parameters aside, exactly one the route produces, or */* (no other
    wildcard, no case folding)."""
    return any(media == "*/*" or media in produces for media in _media_types(accept))


def route_not_acceptable(produces: tuple[str, ...]) -> errors.StatusError:
    """go-restful's 406 as kube's Status carries it (empty details)."""
    message = f"406: Not Acceptable\n\nAvailable representations: {', '.join(produces)}"
    return errors.StatusError(code=406, reason="NotAcceptable", message=message)


def not_acceptable() -> errors.StatusError:
    """kube's own 406 (its negotiation's, past the router): no details at all."""
    accepted = ", ".join(REPRESENTATIONS)
    message = f"only the following media types are accepted: {accepted}"
    return errors.StatusError(code=406, reason="NotAcceptable", message=message, bare=True)


def handler_accepts(accept: str) -> bool:
    """Whether kube's negotiation finds a media type it writes in Accept
    (parameters aside), as its plain handlers (/apis, /apis/<group>) ask."""
    return any(media in _STATUS_MEDIA for media in _media_types(accept))


def status_writable(accept: str) -> bool:
    """Whether kube can write a Status as Accept asks: a clause naming a media
    type it writes, or a wildcard, with no "as" (a 406's Status written for an
    Accept that allows none is indented JSON: kube's WriteRawJSON)."""
    for clause in accept.split(","):
        media, *params = [p.strip() for p in clause.split(";")]
        if media in _STATUS_MEDIA and not any(p.startswith("as=") for p in params):
            return True
    return False


def output(
    accept: str, *, listing: bool = False, streams: bool = False, routed: bool = True
) -> Output:
    """The first clause of Accept the gateway can answer (kube's output
    negotiation: a clause asking for a form this request cannot take, or a media
    type it does not write, gives way to the next), or 406 when none is left:
    go-restful's when no media type is one the route produces (streams: the
    route produces the watch streams too), else kube's. Custom resources are
    not behind go-restful (not routed): theirs is always kube's own. A list
    takes Table or PartialObjectMetadataList, one object Table or
    PartialObjectMetadata."""
    if not accept.strip():
        return Output()
    if routed and not route_accepts(accept, STREAMS if streams else REPRESENTATIONS):
        raise route_not_acceptable(STREAMS if streams else REPRESENTATIONS)
    for clause in accept.split(","):
        media, *params = [p.strip() for p in clause.split(";")]
        options = dict(p.split("=", 1) for p in params if "=" in p)
        if media in _JSON_MEDIA:
            written = JSON
        elif media == YAML:
            written = YAML
        else:
            continue
        transform = options.get("as", "")
        if not transform:
            return Output(written)
        version = options.get("v", "")
        if options.get("g") != "meta.k8s.io" or version not in ("v1", "v1beta1"):
            continue
        if transform in (TABLE, PARTIAL_LIST if listing else PARTIAL):
            return Output(written, transform, version)
    raise not_acceptable()


# gnostic's OpenAPI v2 document in protobuf, under the name kube answers with;
# kubectl asks for it by its older name, which kube also takes.
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_OPENAPI_V2_MEDIA = (
    ("application", "json", JSON),
    ("application", "com.github.proto-openapi.spec.v2@v1.0+protobuf", OPENAPI_V2_PROTOBUF),
    ("application", "com.github.proto-openapi.spec.v2.v1.0+protobuf", OPENAPI_V2_PROTOBUF),
)


@dataclass(frozen=True)
class _Clause:
    type: str
    subtype: str
    q: float


def _before(a: _Clause, b: _Clause) -> bool:
    """goautoneg's order of Accept clauses: higher q first, else a clause with a
    type (then a subtype) before a wildcard, as its comparison has it."""
    if a.q > b.q:
        return True
    if a.type != "*" and b.type == "*":
        return True
    return a.subtype != "*" and b.subtype == "*"


def _accept_clauses(accept: str) -> list[_Clause]:
    """Accept's clauses in the order kube-openapi tries them (goautoneg's
    ParseAccept and Go's insertion sort, which small lists take)."""
    clauses: list[_Clause] = []
    for part in accept.split(","):
        media, *params = part.strip(" ").split(";")
        kind, *rest = (s.strip(" ") for s in media.split("/"))
        if len(rest) == 1:
            subtype = rest[0]
        elif not rest and kind == "*":
            subtype = "*"
        else:
            continue
        q = 1.0
        for param in params:
            name, equals, value = param.partition("=")
            if equals and name.strip(" ") == "q":
                try:  # Go's ParseFloat: no spaces, and 0 for what it cannot read
                    q = float(value) if value == value.strip() else 0.0
                except ValueError:
                    q = 0.0
        clauses.append(_Clause(kind, subtype, q))
    for i in range(1, len(clauses)):
        j = i
        while j > 0 and _before(clauses[j], clauses[j - 1]):
            clauses[j], clauses[j - 1] = clauses[j - 1], clauses[j]
            j -= 1
    return clauses


def openapi_v2(accept: str) -> str | None:
    """What /openapi/v2 is written as for this Accept (JSON or gnostic's
    protobuf), or None when it names neither: kube-openapi's negotiation, where
    no Accept is */* and parameters other than q do not count."""
    for clause in _accept_clauses(accept or "*/*"):
        for kind, subtype, written in _OPENAPI_V2_MEDIA:
            if clause.type in (kind, "*") and clause.subtype in (subtype, "*"):
                return written
    return None


def takes_gzip(accept_encoding: str) -> bool:
    """Whether Accept-Encoding names gzip (kube looks for the bare token, no q-value)."""
    return any(token.strip() == "gzip" for token in accept_encoding.split(","))


AGGREGATED = "application/json;g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList"


def aggregated_discovery(accept: str) -> str:
    """The apidiscovery.k8s.io version the client asks /api and /apis to answer
    in ("v2" or "v2beta1") when it asks for aggregated discovery before the
    plain documents, else ""."""
    for clause in accept.split(","):
        media, *params = [p.strip() for p in clause.split(";")]
        options = dict(p.split("=", 1) for p in params if "=" in p)
        if options.get("as") == "APIGroupDiscoveryList":
            if (
                media == JSON
                and options.get("g") == "apidiscovery.k8s.io"
                and options.get("v") in ("v2", "v2beta1")
            ):
                return options["v"]
            continue
        if media in _JSON_MEDIA:
            return ""
    return ""


@dataclass(frozen=True)
class Body:
    """A request body as JSON, and what reading the body as sent found: kube's
    strict decoding errors for a YAML body's repeated keys (one error, a line
    each), and whether the JSON is a conversion."""

    json: bytes
    strict_errors: tuple[str, ...] = ()
    converted: bool = False


async def body_as_json(content_type: str, body: bytes, into: tuple[str, str] = ("", "")) -> Body:
    """The request body as JSON; YAML and Kubernetes protobuf are converted,
    anything else is 415. No Content-Type at all means JSON, as in kube-apiserver.
    into is the apiVersion and kind the endpoint reads (kubeproto.to_json's;
    the kind also names what a YAML document go-yaml refuses whole was to be,
    and none is an apply's configuration)."""
    media = content_type.split(";")[0].strip().lower()
    if media in ("application/json", ""):
        return Body(body)
    if media == kubeproto.MEDIA_TYPE:
        return Body(kubeproto.to_json(body, into), converted=True)
    if media in ("application/yaml", "application/x-yaml", "text/yaml"):
        try:
            # A thread: converting a large document takes a while (bounded
            # by yaml_bodies' alias rule and EXPANDED_BYTES).
            converted, repeated = await asyncio.to_thread(yaml_bodies.to_json, body)
        except yaml_bodies.TooLargeExpanded:
            raise errors.too_large("the request body is too large") from None
        except (yaml_bodies.ExcessiveAliasing, yaml_bodies.AnchorContainsItself) as e:
            raise _undecodable_yaml(str(e), body, into[1]) from None
        except (yaml.YAMLError, orjson.JSONEncodeError) as e:
            raise errors.bad_request(f"error converting YAML to JSON: {e}") from None
        problems = ("\n  ".join((yaml_bodies.STRICT_ERRORS, *repeated)),) if repeated else ()
        return Body(converted, problems, converted=True)
    raise unsupported_body()


def _undecodable_yaml(problem: str, body: bytes, kind: str) -> errors.StatusError:
    """kube's 400 for a YAML document go-yaml refuses as a whole (its aliases):
    an object's body as its decoder words it (with the body's first bytes), an
    apply's configuration (no kind) as its field manager does."""
    if not kind:
        return errors.bad_request(f"error decoding YAML: error converting YAML to JSON: {problem}")
    return errors.bad_request(
        f"the object provided is unrecognized (must be of type {kind}): "
        f"{problem} ({errors.summarize_data(body)})"
    )


def unsupported_body(accepted: tuple[str, ...] = REPRESENTATIONS) -> errors.StatusError:
    """kube's 415 for a body in a media type it does not decode: the types it
    does, no details (the type sent is not named)."""
    message = (
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted)
    )
    return errors.StatusError(code=415, reason="UnsupportedMediaType", message=message, bare=True)
