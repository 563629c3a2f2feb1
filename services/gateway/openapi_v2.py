"""/openapi/v2: one Swagger 2.0 document of everything the v3 documents describe,
as JSON and as gnostic's protobuf, answered as kube-apiserver (kube-openapi's
handler) answers it.

Clients that read v2 are kubectl above all: it validates a `kind: List`, and
any kind the server does not tell it validates itself, against this document's
definitions, asked for in protobuf only. Both bodies (and their gzip) are made
once from the same JSON each time what is served changes, off the event loop,
and share one ETag, the JSON's hash, as kube's do.
"""

from __future__ import annotations

import email.utils
import hashlib
import time
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from isal import isal_zlib

from services.gateway import negotiation, openapi_proto

Doc = dict[str, Any]
_V3_REF = "#/components/schemas/"
_V2_REF = "#/definitions/"
# kube's gzip: its fastest level, in gzip's framing.
_GZIP_LEVEL = 1
_GZIP_WBITS = 31
# The keys a Swagger 2.0 schema may have (besides x- extensions): a v3 schema's
# nullable, anyOf, oneOf and not have no place in v2, and kube leaves out allOf
# (apiextensions' ToStructuralOpenAPIV2, which v2_schema follows).
_SCHEMA_KEYS = frozenset(
    {
        "$ref",
        "format",
        "title",
        "description",
        "default",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxProperties",
        "minProperties",
        "required",
        "enum",
        "additionalProperties",
        "type",
        "items",
        "properties",
        "discriminator",
        "readOnly",
        "xml",
        "externalDocs",
        "example",
    }
)


def digest(body: bytes) -> str:
    """The hash a document's URL (v3) or ETag (v2) carries."""
    return hashlib.sha512(body).hexdigest().upper()


def v2_schema(schema: Any) -> Any:
    """A v3 schema as v2 can say it and kubectl's v2 validation can read it, as
    kube publishes a custom resource's: no defaults; a nullable value loses its
    type, properties and items, one that keeps unknown fields its properties,
    items and type (kubectl would call the unknown fields errors), an array left
    without items its type; and a nullable property is no longer required."""
    if not isinstance(schema, dict):
        return schema
    converted = {
        k: v
        for k, v in schema.items()
        if (k in _SCHEMA_KEYS or k.startswith("x-")) and k != "default"
    }
    if schema.get("nullable") or schema.get("x-kubernetes-preserve-unknown-fields"):
        for key in ("type", "items", "properties"):
            converted.pop(key, None)
    if converted.get("type") == "array" and "items" not in converted:
        del converted["type"]
    properties = converted.get("properties")
    if isinstance(properties, dict):
        nullable = {k for k, v in properties.items() if isinstance(v, dict) and v.get("nullable")}
        converted["properties"] = {k: v2_schema(v) for k, v in properties.items()}
    else:
        nullable = set()
    additional = converted.get("additionalProperties")
    if isinstance(additional, dict):
        if additional.get("nullable"):
            converted.pop("required", None)
        converted["additionalProperties"] = v2_schema(additional)
    if nullable and isinstance(converted.get("required"), list):
        converted["required"] = [r for r in converted["required"] if r not in nullable]
        if not converted["required"]:
            del converted["required"]
    items = converted.get("items")
    if isinstance(items, list):
        converted["items"] = [v2_schema(v) for v in items]
    elif isinstance(items, dict):
        converted["items"] = v2_schema(items)
    return converted


def _v2_refs(value: Any) -> Any:
    """value with its $refs pointing where a v2 document keeps schemas."""
    if isinstance(value, dict):
        return {
            k: v.replace(_V3_REF, _V2_REF) if k == "$ref" else _v2_refs(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_v2_refs(v) for v in value]
    return value


def _v2_parameter(parameter: Doc) -> Doc:
    converted = {k: v for k, v in parameter.items() if k != "schema"}
    converted.update(parameter.get("schema") or {})
    return converted


def _v2_operation(operation: Doc) -> Doc:
    converted = {
        k: v for k, v in operation.items() if k not in ("parameters", "requestBody", "responses")
    }
    parameters = [_v2_parameter(p) for p in operation.get("parameters") or []]
    if body := operation.get("requestBody"):
        content = body["content"]
        converted["consumes"] = list(content)
        schema = next(iter(content.values()))["schema"]
        parameters.append({"name": "body", "in": "body", "required": True, "schema": schema})
    converted["parameters"] = parameters
    converted["produces"] = ["application/json", "application/yaml"]
    converted["responses"] = {
        code: (
            {
                "description": answer["description"],
                "schema": next(iter(answer["content"].values()))["schema"],
            }
            if "content" in answer
            else answer
        )
        for code, answer in operation["responses"].items()
    }
    return converted


def swagger(documents: list[Doc], server_version: str) -> Doc:
    """One OpenAPI v2 (Swagger 2.0) document of what the v3 documents describe,
    for clients that read v2."""
    paths: Doc = {}
    definitions: Doc = {}
    for doc in documents:
        for name, schema in doc["components"]["schemas"].items():
            definitions[name] = v2_schema(schema)
        for path, operations in doc["paths"].items():
            paths[path] = {
                method: [_v2_parameter(p) for p in op]
                if method == "parameters"
                else _v2_operation(op)
                for method, op in operations.items()
            }
    converted: Doc = _v2_refs(
        {
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": server_version},
            "paths": paths,
            "definitions": definitions,
        }
    )
    return converted


def _gzip(body: bytes) -> bytes:
    return isal_zlib.compress(body, _GZIP_LEVEL, _GZIP_WBITS)


@dataclass(frozen=True)
class Bodies:
    """The v2 document as served: each media type's body, plain and gzipped,
    under one ETag and one Last-Modified."""

    etag: str
    last_modified: str
    plain: dict[str, bytes]
    gzipped: dict[str, bytes]


def build(v3_documents: list[bytes], server_version: str) -> Bodies:
    """The v2 bodies of the v3 documents (JSON). CPU-bound: run it off the loop."""
    doc = swagger([orjson.loads(body) for body in v3_documents], server_version)
    json_body = orjson.dumps(doc)
    plain = {
        negotiation.JSON: json_body,
        negotiation.OPENAPI_V2_PROTOBUF: openapi_proto.document(doc).SerializeToString(),
    }
    return Bodies(
        etag=f'"{digest(json_body)}"',
        last_modified=email.utils.formatdate(time.time(), usegmt=True),
        plain=plain,
        gzipped={media: _gzip(body) for media, body in plain.items()},
    )


def _matches(if_none_match: str, etag: str) -> bool:
    """Whether If-None-Match names etag (Go's ServeContent: weak comparison, or *)."""
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


def respond(request: web.Request, bodies: Bodies) -> web.Response:
    """kube's answer to /openapi/v2: the first Accept clause it writes (an
    empty 406 if none), 304 for a current If-None-Match, gzip when taken."""
    headers = {"Cache-Control": "no-cache, private"}
    response = web.Response(status=406, headers=headers)
    response.headers.add("Vary", "Accept-Encoding")
    response.headers.add("Vary", "Accept")
    media = negotiation.openapi_v2(request.headers.get("Accept", ""))
    if media is None:
        return response
    response.headers["Etag"] = bodies.etag
    if _matches(request.headers.get("If-None-Match", ""), bodies.etag):
        response.set_status(304)
        return response
    response.set_status(200)
    response.headers["Last-Modified"] = bodies.last_modified
    response.content_type = media
    if negotiation.takes_gzip(request.headers.get("Accept-Encoding", "")):
        response.headers["Content-Encoding"] = "gzip"
        response.body = bodies.gzipped[media]
    else:
        response.body = bodies.plain[media]
    return response
