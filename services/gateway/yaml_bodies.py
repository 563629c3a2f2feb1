"""YAML request bodies as JSON, with the keys their mappings repeat.

kube reads YAML with a decoder that keeps the last of a repeated key (as
PyYAML does) and, for fieldValidation, again with a strict one, to which each
repeated key is an error: `line 12: key "paused" already set in map`, naming
the line of the repeated key's value and the key as Go prints it (%#v); a
nested mapping's come before the mapping's own, in document order.

JSON is YAML: a JSON body is read as JSON (as kube reads its numbers), and its
lines are counted by the YAML reader only when a key repeats.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import yaml

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


def _repeated_keys(loader: Any, node: yaml.Node, found: list[str], seen: set[int]) -> None:
    if id(node) in seen:  # an alias met again (or its own content)
        return
    if isinstance(node, yaml.SequenceNode):
        seen.add(id(node))
        for item in node.value:
            _repeated_keys(loader, item, found, seen)
    elif isinstance(node, yaml.MappingNode):
        seen.add(id(node))
        keys: set[tuple[type, Any]] = set()
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                continue
            _repeated_keys(loader, value_node, found, seen)
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            key = loader.construct_object(key_node, deep=True)
            # Go tells 1 from true and from 1.0; Python's equality does not.
            if (type(key), key) in keys:
                found.append(
                    f"line {value_node.start_mark.line + 1}: key {go_key(key)} already set in map"
                )
            keys.add((type(key), key))


def _load(text: bytes) -> tuple[Any, list[str]]:
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, []
        found: list[str] = []
        _repeated_keys(loader, node, found, set())
        return loader.construct_document(node), found
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
        return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS), found
    if not duplicate_fields(body):
        return body, []
    # Tabs are only ever whitespace in JSON, and YAML takes none for indentation.
    try:
        return body, _load(body.replace(b"\t", b" "))[1]
    except yaml.YAMLError:
        return body, []
