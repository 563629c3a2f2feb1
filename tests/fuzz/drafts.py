"""One fuzzed request of an operation, drawn by hypothesis: values for the
parameters it declares (and some it does not), a body fit for its action, an
Accept header; then made into the bytes sent. Watches are bounded here: one
that the fuzzer asks for carries a short timeoutSeconds most of the time, and
the Request says whether its stream must end."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

from tests.fuzz import bodies, params, seeds
from tests.fuzz.client import Request, first_value
from tests.fuzz.operations import Operation

Doc = dict[str, Any]
# A name the run resolves to an object it creates just before the request.
VICTIM = params.VICTIM
ACCEPTS = [
    "application/json",
    "application/yaml",
    "*/*",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    "application/json;as=Table;v=v9;g=meta.k8s.io",
    "text/html",
    "application/vnd.kubernetes.protobuf;q=0.1, application/json",
    "application/x-nothing",
    "",
    ";;",
]
# The answer a watch asks for, in its own words, must end within this (else
# it may stay open, and the client leaves after a sample).
SHORT_TIMEOUT = re.compile(r"[0-9]{1,2}")


@dataclass(frozen=True, kw_only=True)
class Context:
    """What the run seeded, that requests name."""

    namespace: str
    targets: dict[str, str]  # resource -> its seeded object's name (default "target")
    versions: list[str]
    continues: list[str]
    definitions: Doc

    def target(self, resource: str) -> str:
        return self.targets.get(resource, "target")


@dataclass(frozen=True, kw_only=True)
class Draft:
    operation: Operation
    path: dict[str, str]
    query: list[tuple[str, params.Value]]
    tail: str
    body: bodies.Body | None
    accept: str | None
    victim: bool  # a deletecollection's: create a victim first


def template(operation: Operation, context: Context, name: str) -> Doc:
    """The valid body for operation (a create's under name)."""
    api_version, kind = operation.kind
    if operation.subresource == "scale":
        api_version, kind = "autoscaling/v1", "Scale"
    elif operation.subresource == "token":
        api_version, kind = "authentication.k8s.io/v1", "TokenRequest"
    namespace = context.namespace if "{namespace}" in operation.path else ""
    return seeds.valid(api_version, kind, name, namespace)


@st.composite
def _query(draw: st.DrawFn, operation: Operation, context: Context) -> list[tuple[str, Any]]:
    """Some of the declared parameters (and maybe one more): all of them valid,
    or one of them hostile, or any of them."""
    named = params.named(context.versions, context.continues)
    declared = [p for p in operation.parameters if p.where == "query"]
    chosen = [p.name for p in declared if draw(st.booleans())]
    choices = {p.name: named.get(p.name, params.of_type(p)) for p in declared}
    for _ in range(draw(st.integers(min_value=0, max_value=1))):
        key = draw(st.sampled_from(params.UNDECLARED))
        choices.setdefault(key, named.get(key, params.Choice(params.junk, params.junk)))
        chosen.append(key)
    mode = draw(st.sampled_from(["valid", "valid", "one", "any"]))
    bad = draw(st.sampled_from(chosen)) if chosen and mode == "one" else None
    query: list[tuple[str, Any]] = []
    for key in chosen:
        choice = choices[key]
        hostile = key == bad or (mode == "any" and draw(st.booleans()))
        query.append((key, draw(choice.hostile if hostile else choice.valid)))
    if operation.action == "watch" or any(k == "watch" for k, _ in query):
        # A watch ends in a second or two, unless its timeout is hostile.
        hostile = mode == "any" and draw(st.booleans())
        timeouts = params.integers if hostile else st.sampled_from(["1"] * 8 + ["2", "0"])
        query = [(k, v) for k, v in query if k != "timeoutSeconds"]
        query.append(("timeoutSeconds", draw(timeouts)))
    return draw(st.permutations(query))


def _body(operation: Operation, context: Context) -> st.SearchStrategy[bodies.Body | None]:
    if operation.action == "post":
        created = st.integers(min_value=0, max_value=10**6).map(lambda n: f"fuzz-{n}")
        if operation.resource == "customresourcedefinitions":
            created = created.map(lambda n: f"{seeds.CRD_PLURAL}.{n}.example.com")
        return (created | st.just(context.target(operation.resource))).flatmap(
            lambda name: bodies.objects(
                template(operation, context, name), context.definitions, operation.body
            )
        )
    valid = template(operation, context, context.target(operation.resource))
    if operation.action == "put":
        return bodies.objects(valid, context.definitions, operation.body)
    if operation.action == "patch":
        return bodies.patches(valid)
    if operation.action in ("delete", "deletecollection"):
        return bodies.deletions()
    return st.none()


def drafts(operation: Operation, context: Context) -> st.SearchStrategy[Draft]:
    """Requests of operation, as hypothesis draws them."""
    path: dict[str, st.SearchStrategy[str]] = {}
    if "{namespace}" in operation.path:
        path["namespace"] = params.namespaces(context.namespace)
    if "{name}" in operation.path:
        seeded = context.target(operation.resource)
        path["name"] = params.names(seeded, victims=operation.action == "delete")
    return st.builds(
        Draft,
        operation=st.just(operation),
        path=st.fixed_dictionaries(path),
        query=_query(operation, context),
        tail=st.sampled_from(params.RAW_TAILS),
        body=_body(operation, context),
        accept=st.sampled_from([None] * 24 + ACCEPTS),
        victim=st.booleans() if operation.action == "deletecollection" else st.just(False),
    )


def _encoded(value: params.Value) -> str:
    return quote(value, safe="")


def _narrowed(selector: params.Value) -> params.Value:
    """selector and the victims' label (so a bad selector stays bad)."""
    if isinstance(selector, bytes):
        return selector + b"," + seeds.VICTIM_LABEL.encode()
    return f"{selector},{seeds.VICTIM_LABEL}" if selector else seeds.VICTIM_LABEL


def request(draft: Draft) -> Request:
    """The request a draft (its victims resolved) sends."""
    operation = draft.operation
    path = operation.path
    for key, value in draft.path.items():
        path = path.replace("{" + key + "}", _encoded(value))
    pairs = list(draft.query)
    if operation.action == "deletecollection":
        # Only victims may go: the seeded targets are what the other requests name.
        selector = next((v for k, v in pairs if k == "labelSelector"), "")
        pairs = [(k, v) for k, v in pairs if k != "labelSelector"]
        pairs.insert(0, ("labelSelector", _narrowed(selector)))
    query = "&".join(f"{_encoded(k)}={_encoded(v)}" for k, v in pairs) + draft.tail
    headers: dict[str, str] = {}
    if draft.accept is not None:
        headers["Accept"] = draft.accept
    body = None
    if draft.body is not None:
        content_type, body = draft.body
        if content_type:
            headers["Content-Type"] = content_type
    watching = operation.action == "watch" or (
        operation.method == "get" and params.truthy(first_value("?" + query, "watch"))
    )
    timeout = first_value("?" + query, "timeoutSeconds") if watching else None
    ends = timeout is not None and SHORT_TIMEOUT.fullmatch(timeout) and 0 < int(timeout) <= 3
    return Request(
        method=operation.method,
        target=path + ("?" + query if query else ""),
        headers=headers,
        body=body,
        watch=watching,
        ends_within=float(timeout) if ends and timeout else None,
    )
