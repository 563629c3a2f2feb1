"""Reading kube's EncryptionConfiguration, with errors that name the line.

A malformed file must stop the storage service at start-up, before anything
is written with the wrong keys, and say exactly where the file is wrong; so
the YAML is walked as nodes, which keep their positions.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from services.storage.encryption._providers import (
    KEY_SIZES,
    PROVIDER_TYPES,
    Identity,
    Provider,
    Random,
)

API_VERSION = "apiserver.config.k8s.io/v1"
KIND = "EncryptionConfiguration"
_RESOURCE = re.compile(
    r"^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.(\*|[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?)?$"
)


class ConfigError(Exception):
    """The configuration is not valid; the message names the file and line."""


@dataclass(frozen=True)
class ResourcePattern:
    """A resource entry: "secrets", "widgets.example.com", "*.apps", "*." or "*.*"."""

    resource: str | None  # None: any resource
    group: str | None  # None: any group; "" is the core group

    def matches(self, group: str, resource: str) -> bool:
        return (self.group is None or self.group == group) and (
            self.resource is None or self.resource == resource
        )


@dataclass(frozen=True)
class Rule:
    patterns: tuple[ResourcePattern, ...]
    providers: tuple[Provider, ...]


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, node: yaml.Node, message: str) -> ConfigError:
        return ConfigError(f"{self.source}:{node.start_mark.line + 1}: {message}")

    def mapping(self, node: yaml.Node, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.error(node, f"{what} must be a mapping")
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise self.error(key, f"{what} has a key that is not a string")
            if key.value in out:
                raise self.error(key, f"{what} has {key.value!r} twice")
            out[key.value] = (key, value)
        return out

    def sequence(self, node: yaml.Node, what: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode) or not node.value:
            raise self.error(node, f"{what} must be a non-empty list")
        return list(node.value)

    def string(self, node: yaml.Node, what: str) -> str:
        if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:str":
            raise self.error(node, f"{what} must be a string")
        return str(node.value)


def _pattern(reader: _Reader, node: yaml.Node) -> ResourcePattern:
    text = reader.string(node, "a resource")
    if text != text.lower():
        raise reader.error(node, f"resource {text!r} must be lowercase")
    if not _RESOURCE.match(text) or text == "*":
        raise reader.error(
            node,
            f"resource {text!r} is not a resource: use name, name.group, *.group, '*.' or '*.*'",
        )
    name, _, group = text.partition(".")
    if name == "*":
        return ResourcePattern(resource=None, group=None if group == "*" else group)
    if group == "*":
        raise reader.error(node, f"resource {text!r}: a group wildcard needs '*' as the resource")
    return ResourcePattern(resource=name, group=group)


def _providers(reader: _Reader, node: yaml.Node, random: Random) -> list[Provider]:
    entries = reader.mapping(node, "a provider")
    if len(entries) != 1:
        raise reader.error(
            node, "each providers entry must name exactly one provider (split them into entries)"
        )
    (name, (key_node, value)) = next(iter(entries.items()))
    if name == "kms":
        raise reader.error(key_node, "the kms provider is not supported by strata")
    if name not in PROVIDER_TYPES:
        raise reader.error(
            key_node,
            f"unknown provider {name!r}: expected one of identity, aesgcm, aescbc, secretbox",
        )
    if name == "identity":
        if not (isinstance(value, yaml.ScalarNode) and value.value in ("", "null", "~")) and not (
            isinstance(value, yaml.MappingNode) and not value.value
        ):
            raise reader.error(value, "identity takes no settings: write 'identity: {}'")
        return [Identity()]
    settings = reader.mapping(value, name)
    if "keys" not in settings:
        raise reader.error(value, f"{name} needs a 'keys' list")
    providers: list[Provider] = []
    seen: set[str] = set()
    for key in reader.sequence(settings["keys"][1], f"{name} keys"):
        fields = reader.mapping(key, f"a {name} key")
        if "name" not in fields or "secret" not in fields:
            raise reader.error(key, f"a {name} key needs a name and a secret")
        key_name = reader.string(fields["name"][1], "a key name")
        if not key_name or ":" in key_name:
            raise reader.error(fields["name"][1], "a key name must be non-empty and have no ':'")
        if key_name in seen:
            raise reader.error(fields["name"][1], f"{name} key name {key_name!r} is used twice")
        seen.add(key_name)
        secret_node = fields["secret"][1]
        try:
            secret = base64.b64decode(reader.string(secret_node, "a secret"), validate=True)
        except (binascii.Error, ValueError):
            raise reader.error(secret_node, f"secret of key {key_name!r} is not base64") from None
        sizes = KEY_SIZES[name]
        if len(secret) not in sizes:
            allowed = " or ".join(str(n) for n in sizes)
            raise reader.error(
                secret_node,
                f"secret of {name} key {key_name!r} is {len(secret)} bytes; it must be {allowed}",
            )
        providers.append(PROVIDER_TYPES[name](key_name=key_name, secret=secret, random=random))
    return providers


def parse_config(text: str, source: str = "<config>", random: Random = os.urandom) -> list[Rule]:
    reader = _Reader(source)
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{source}{line}: not valid YAML: {e}") from None
    if root is None:
        raise ConfigError(f"{source}: the file is empty")
    top = reader.mapping(root, "the configuration")
    for field, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        if field not in top:
            raise reader.error(root, f"{field} is missing; expected {expected!r}")
        value = reader.string(top[field][1], field)
        if value != expected:
            raise reader.error(top[field][1], f"{field} is {value!r}; expected {expected!r}")
    if "resources" not in top:
        raise reader.error(root, "resources is missing")
    rules = []
    for entry in reader.sequence(top["resources"][1], "resources"):
        fields = reader.mapping(entry, "a resources entry")
        for needed in ("resources", "providers"):
            if needed not in fields:
                raise reader.error(entry, f"a resources entry needs {needed!r}")
        patterns = tuple(
            _pattern(reader, node) for node in reader.sequence(fields["resources"][1], "resources")
        )
        providers = tuple(
            provider
            for node in reader.sequence(fields["providers"][1], "providers")
            for provider in _providers(reader, node, random)
        )
        rules.append(Rule(patterns=patterns, providers=providers))
    return rules


def load_config(path: Path, random: Random = os.urandom) -> list[Rule]:
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"{path}: cannot read the encryption configuration: {e}") from None
    return parse_config(text, str(path), random)
