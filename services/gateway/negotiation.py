"""Content negotiation: what a request body is in, and whether the client asked
for a meta.k8s.io Table instead of the objects themselves."""

from __future__ import annotations

import asyncio

import orjson
import yaml

from services.gateway import kubeproto
from strata.api import errors


def wants_table(accept: str) -> bool:
    """True when the first acceptable media type names a meta.k8s.io Table."""
    for clause in accept.split(","):
        media, *params = [p.strip() for p in clause.split(";")]
        options = dict(p.split("=", 1) for p in params if "=" in p)
        if options.get("as") == "Table" and options.get("g") == "meta.k8s.io":
            if media in ("application/json", "*/*") and options.get("v") in ("v1", "v1beta1"):
                return True
            continue
        if options.get("as"):
            continue  # another transformation we do not serve; try the next clause
        if media in ("application/json", "*/*", "application/*", "") or media.endswith("+json"):
            return False
    return False


async def body_as_json(content_type: str, body: bytes) -> bytes:
    """The request body as JSON bytes; YAML and Kubernetes protobuf are converted,
    anything else is 415. No Content-Type at all means JSON, as in kube-apiserver."""
    media = content_type.split(";")[0].strip().lower()
    if media in ("application/json", ""):
        return body
    if media == kubeproto.MEDIA_TYPE:
        return kubeproto.to_json(body)
    if media in ("application/yaml", "application/x-yaml", "text/yaml"):
        try:
            loaded = await asyncio.to_thread(yaml.safe_load, body)
        except yaml.YAMLError as e:
            raise errors.bad_request(f"error converting YAML to JSON: {e}") from None
        return orjson.dumps(loaded)
    raise errors.unsupported_media_type(content_type)
