"""YAML request bodies as JSON, with the keys their mappings repeat.

kube reads YAML with a decoder that keeps the last of a repeated key (as
PyYAML does) and, for fieldValidation, again with a strict one, to which each
repeated key is an error: `line 12: key "paused" already set in map`, naming
the line of the repeated key's value and the key as Go prints it (%#v); a
nested mapping's come before the mapping's own, in document order.

JSON is YAML: a JSON body is read as JSON (as kube reads its numbers), and its
lines are counted by the YAML reader only when a key repeats.

Aliases make a small document a large one (a "billion laughs" is 1 KB).
kube's go-yaml refuses a document whose decoding is mostly alias expansion
(its allowedAliasRatio rule, reproduced here with its thresholds), and so does
the gateway, counting before anything is expanded; what passes is converted
whole only up to EXPANDED_BYTES of JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml

from strata.api import deep_json
from strata.api.strict_decoding import duplicate_fields

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE = "tag:yaml.org,2002:merge"
# How kube's YAML decoder starts its strict errors, one line per problem after.
STRICT_ERRORS = "yaml: unmarshal errors:"


def go_key(key: object) -> str:
    """A decoded key as Go's %#v prints it."""
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=False)
    if key is None:
        return "<nil>"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, float):
        text = repr(key)
        return text[:-2] if text.endswith(".0") else text
    return str(key)


class ExcessiveAliasing(yaml.YAMLError):
    """go-yaml's refusal of a document whose decoding is mostly alias expansion."""

    def __init__(self) -> None:
        super().__init__("yaml: document contains excessive aliasing")


class AnchorContainsItself(yaml.YAMLError):
    """go-yaml's refusal of an alias inside the node its anchor names."""

    def __init__(self, anchor: str) -> None:
        super().__init__(f"yaml: anchor '{anchor}' value contains itself")


class TooLargeExpanded(yaml.YAMLError):
    """A document whose aliases expand past what the gateway converts."""

    def __init__(self) -> None:
        super().__init__(f"the document expands to more than {EXPANDED_BYTES} bytes of JSON")


# go-yaml's allowedAliasRatio (decode.go): up to 400,000 decoded nodes, 99% of
# them may come from aliases; from 4,000,000 on, 10%; linearly in between.
_RATIO_LOW, _RATIO_HIGH = 400_000, 4_000_000
# Counts past this are all refused alike (the sizes of a "billion laughs").
_CAP = 10**15
# What the gateway hands on of a converted document, however its aliases
# expand: what go-yaml's ratio lets through stays far below (a scalar's
# aliases are not counted by size), and gRPC carries 64 MiB.
EXPANDED_BYTES = 32 * 1024 * 1024


def allowed_alias_ratio(decoded: int) -> float:
    """The share of decoded nodes go-yaml lets alias expansion make."""
    if decoded <= _RATIO_LOW:
        return 0.99
    if decoded >= _RATIO_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((decoded - _RATIO_LOW) / (_RATIO_HIGH - _RATIO_LOW))


def excessive(aliased: int, decoded: int) -> bool:
    """go-yaml's check, made at every node it decodes."""
    return aliased > 100 and decoded > 1000 and aliased / decoded > allowed_alias_ratio(decoded)


class _Walk:
    """One pass over a composed document, in document order, with a stack of
    its own (libyaml nests up to 1,000 deep), counting the nodes go-yaml
    decodes as go-yaml counts them: each node once where it is written and,
    for an alias, the alias and again all its anchor's node holds (aliases in
    it included), the document refused at the first count its ratio rule
    refuses. PyYAML's composer hands an alias on as the node its anchor
    names, so a node met again is an alias. What a node expands to is known
    when it is done and added at each alias, which keeps the pass linear in
    the document; the ratio only grows while an alias expands, so checking
    after the whole expansion checks every node of it. The same pass finds
    the keys a mapping repeats (kube's strict decoder's errors; none under a
    merge key), each after its value's own."""

    def __init__(self, loader: Any, text: bytes) -> None:
        self.loader, self.text = loader, text
        self.decoded = 1  # the document node
        self.aliased = 0
        # The nodes done: what each expands to, in nodes and in bytes of JSON.
        self.done: dict[yaml.Node, tuple[int, int]] = {}
        self.scalars: set[yaml.Node] = set()  # the scalars met (each expands to itself)
        self.open: set[yaml.Node] = set()
        self.repeated: list[str] = []

    def _count(self, nodes: int, aliased: bool) -> None:
        self.decoded = min(self.decoded + nodes, _CAP)
        if aliased:
            self.aliased = min(self.aliased + nodes, _CAP)
        if self.aliased > 100 and excessive(self.aliased, self.decoded):
            raise ExcessiveAliasing

    def run(self, root: yaml.Node) -> int:
        """Walk the document from root; the bytes of JSON it expands to."""
        self._count(1, aliased=False)
        if isinstance(root, yaml.ScalarNode):
            return len(root.value) + 3
        stack = [self._frame(root, reported=True, counted=True)]
        while stack:
            frame = stack[-1]
            self._new_scalars(frame)
            if frame.next == len(frame.children):
                stack.pop()
                self._finish(frame, stack[-1] if stack else None)
                continue
            entry = frame.children[frame.next]
            frame.next += 1
            child, reported, counted = (entry, frame.reported, True) if frame.listed else entry
            if isinstance(child, tuple):  # a key, checked once its value is walked
                self._check_key(frame.keys, *child)
            elif child in self.done or child in self.scalars:
                self._alias(frame, child, counted)
            elif child in self.open:
                raise AnchorContainsItself(_anchor_around_alias(self.text))
            else:
                self._count(1 if counted else 0, aliased=False)
                stack.append(self._frame(child, reported=reported, counted=counted))
        return self.done[root][1]

    def _new_scalars(self, frame: _Frame) -> None:
        """The scalars met for the first time from frame's next child on (most
        of a document's nodes), in one loop of locals."""
        children, at, scalars, scalar = frame.children, frame.next, self.scalars, yaml.ScalarNode
        size = nodes = 0
        decoded, aliased, listed, counted = self.decoded, self.aliased, frame.listed, True
        while at < len(children):
            if listed:
                child = children[at]
            else:
                child, _, counted = children[at]
            if type(child) is not scalar or child in scalars:
                break
            at += 1
            scalars.add(child)
            size += len(child.value) + 3
            if counted:
                nodes += 1
                decoded += 1
                if aliased > 100 and excessive(aliased, decoded):
                    raise ExcessiveAliasing
        frame.next, frame.size, frame.nodes = at, frame.size + size, frame.nodes + nodes
        self.decoded = decoded

    def _frame(self, node: yaml.Node, *, reported: bool, counted: bool) -> _Frame:
        self.open.add(node)
        if isinstance(node, yaml.SequenceNode):  # its items, each as the list is
            return _Frame(node, node.value, nodes=1 if counted else 0, reported=reported)
        children: list[Any] = []
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.tag == _MERGE:
                    # go-yaml decodes neither the merge key nor a list of maps merged.
                    listed = isinstance(value, yaml.SequenceNode) and value not in self.done
                    children.append((value, False, not listed))
                    continue
                children += [(key, False, True), (value, reported, True)]
                if reported and isinstance(key, yaml.ScalarNode):
                    children.append(((key, value), False, False))
        return _Frame(node, children, nodes=1 if counted else 0, reported=reported, listed=False)

    def _alias(self, frame: _Frame, node: yaml.Node, counted: bool) -> None:
        """An alias: itself, then all its anchor's node holds, as aliased."""
        if isinstance(node, yaml.ScalarNode):
            nodes, size = 1, len(node.value) + 3
        else:
            nodes, size = self.done[node]
        self._count(1 if counted else 0, aliased=False)
        self._count(nodes, aliased=True)
        frame.nodes = min(frame.nodes + (1 if counted else 0) + nodes, _CAP)
        frame.size = min(frame.size + size, _CAP)

    def _finish(self, frame: _Frame, parent: _Frame | None) -> None:
        node = frame.node  # a collection: its brackets, and a colon a pair
        frame.size += 2 + (len(node.value) if isinstance(node, yaml.MappingNode) else 0)
        self.open.discard(node)
        self.done[node] = (frame.nodes, frame.size)
        if parent is not None:
            parent.nodes = min(parent.nodes + frame.nodes, _CAP)
            parent.size = min(parent.size + frame.size, _CAP)

    def _check_key(self, keys: set[tuple[type, Any]], key_node: Any, value_node: Any) -> None:
        key = self.loader.construct_object(key_node, deep=True)
        # Go tells 1 from true and from 1.0; Python's equality does not.
        if (type(key), key) in keys:
            self.repeated.append(
                f"line {value_node.start_mark.line + 1}: key {go_key(key)} already set in map"
            )
        keys.add((type(key), key))


@dataclass
class _Frame:
    """A collection being walked: its children (a list's own items, listed, or
    a mapping's as (child, whether its keys' repeats are reported, whether
    go-yaml counts it)), whether its keys' repeats are reported, the next
    child's index, what it expands to so far (nodes, bytes of JSON), and its
    keys."""

    node: yaml.Node
    children: list[Any]
    nodes: int
    reported: bool
    listed: bool = True
    next: int = 0
    size: int = 0
    keys: set[tuple[type, Any]] = field(default_factory=set)


def _anchor_around_alias(text: bytes) -> str:
    """The anchor of the first alias met inside its own anchor's node (read
    again from the events: the composer keeps no names)."""
    anchors: list[str | None] = []
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            anchors.append(event.anchor)
        elif isinstance(event, yaml.CollectionEndEvent):
            anchors.pop()
        elif isinstance(event, yaml.AliasEvent) and event.anchor in anchors:
            return str(event.anchor)
    return ""


def _load(text: bytes) -> tuple[Any, list[str]]:
    """text's one document, its repeated keys, and nothing past go-yaml's
    alias rule (ExcessiveAliasing) or EXPANDED_BYTES of JSON."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, []
        walk = _Walk(loader, text)
        if walk.run(node) > EXPANDED_BYTES:
            raise TooLargeExpanded
        return loader.construct_document(node), walk.repeated
    finally:
        loader.dispose()


def to_json(body: bytes) -> tuple[bytes, list[str]]:
    """body, a YAML document, as JSON, and one error per key a mapping of it
    repeats. Raises yaml.YAMLError, or orjson.JSONEncodeError for values JSON
    has no form for (binary, sets, lone surrogates)."""
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError:
        data, found = _load(body)
        # Keys YAML types (1, true, null) become strings, as kube's converter makes them.
        return deep_json.dumps(data, non_str_keys=True), found
    if not duplicate_fields(body):
        return body, []
    # Tabs are only ever whitespace in JSON, and YAML takes none for indentation.
    try:
        return body, _load(body.replace(b"\t", b" "))[1]
    except yaml.YAMLError:
        return body, []
