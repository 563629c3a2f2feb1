"""The strategy contract (kube's RESTCreateStrategy/RESTUpdateStrategy) and the
metadata rules every resource shares.

A strategy is a stateless object plugged into the generic Store as
configuration; it says what is special about one resource and nothing else.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

from strata.api import errors, names
from strata.api.causes import (
    forbidden,
    go_value,
    immutable,
    invalid_value,
    not_supported,
    required,
    too_long,
)
from strata.api.errors import Cause
from strata.api.selectors import SELECTOR_OPERATORS

Obj = dict[str, Any]


class Strategy(Protocol):
    namespaced: bool

    def prepare_for_create(self, obj: Obj) -> None:
        """Clear or default what a client may not set."""
        ...

    def validate(self, obj: Obj) -> list[Cause]:
        """Field errors of a new object (metadata included)."""
        ...

    def prepare_for_update(self, obj: Obj, old: Obj) -> None: ...

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]: ...


# Called once a write's fate is known: True when it was stored.
Finish = Callable[[bool], Awaitable[None]]


class WriteHooks(Protocol):
    """What a resource's writes do beyond its own key (kube's BeginCreate,
    BeginUpdate and AfterDelete): a Service's ClusterIP and NodePorts. begin_*
    run after validation and may change the object or refuse it; the Finish
    they return undoes or completes their work."""

    async def begin_create(self, obj: Obj, *, dry_run: bool) -> Finish: ...

    async def begin_update(self, obj: Obj, old: Obj, *, dry_run: bool) -> Finish: ...

    async def after_delete(self, obj: Obj) -> None: ...


class WriteGuard(Protocol):
    """Who may write what an object says, beyond what authorizing the request
    decided (kube's policy-based RBAC storage: no granting of permissions one
    does not hold). Run on creates and on updates of the object itself, before
    the strategy's validation (kube's is outside its Store), with the requester of the write
    (services/registry/generic/requester.py); raises to refuse."""

    async def guard_create(self, obj: Obj) -> None: ...

    async def guard_update(self, obj: Obj, old: Obj) -> None: ...


@runtime_checkable
class WarningStrategy(Protocol):
    """A strategy with warnings for writes it lets through (kube's
    WarningsOnCreate and WarningsOnUpdate)."""

    def warnings_on_create(self, obj: Obj) -> list[str]: ...

    def warnings_on_update(self, obj: Obj, old: Obj) -> list[str]: ...


@runtime_checkable
class DecodableStrategy(Protocol):
    """A strategy naming the Go types of its kind's fields, so a value of the
    wrong JSON type is refused in kube's decoder's words (check_decodable)
    before anything else looks at the object."""

    go_types: tuple[tuple[str, str, str], ...]


@runtime_checkable
class DeletionGuard(Protocol):
    """A strategy that keeps some objects whatever a client asks (kube's
    NamespaceLifecycle keeps default, kube-system and kube-public): why name
    may not be deleted (403), or "" when it may."""

    def deletion_refused(self, name: str) -> str: ...


class StatusStrategy(Protocol):
    """What a resource with a status subresource checks on a status write (the
    Store has already put the old object's everything-but-status back)."""

    def validate_status_update(self, obj: Obj, old: Obj) -> list[Cause]: ...


def lookup(obj: Obj, path: str) -> Any:
    """The value at a dotted path, or None where the path leads nowhere."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def assign(obj: Obj, path: str, value: Any) -> None:
    """Set the value at a dotted path, making the maps on the way."""
    *parents, last = path.split(".")
    for part in parents:
        child = obj.get(part)
        if not isinstance(child, dict):
            child = obj[part] = {}
        obj = child
    obj[last] = value


def next_generation(obj: Obj, old: Obj, changed: bool) -> None:
    """metadata.generation: the old one, plus one when what it counts changed."""
    generation = int((old.get("metadata") or {}).get("generation") or 1)
    obj["metadata"]["generation"] = generation + 1 if changed else generation


# Go's JSON names for what a value is, in its "cannot unmarshal" errors.
def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}" if isinstance(value, float) else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _fits(value: Any, go_type: str) -> bool:
    if go_type.startswith(("int", "uint")):
        return isinstance(value, int) and not isinstance(value, bool)
    if go_type == "string" or go_type.startswith("string:"):
        return isinstance(value, str)
    if go_type == "bool":
        return isinstance(value, bool)
    if go_type.startswith("[]"):
        return isinstance(value, list)
    return isinstance(value, dict)  # a struct or a map


def _values_at(value: Any, parts: list[str]) -> Iterator[Any]:
    """Every value at a dotted path whose "[]" parts range over a list's items."""
    if not parts:
        yield value
        return
    part, rest = parts[0], parts[1:]
    if part.endswith("[]"):
        items = value.get(part[:-2]) if isinstance(value, dict) else None
        for item in items if isinstance(items, list) else ():
            yield from _values_at(item, rest)
    elif isinstance(value, dict) and value.get(part) is not None:
        yield from _values_at(value[part], rest)


def check_decodable(
    obj: Obj, kind: str, version: str, fields: Iterable[tuple[str, str, str]]
) -> None:
    """kube's decoder: a field of the wrong JSON type makes the whole body a 400
    (before any field rule runs). fields are (dotted path, the Go struct holding
    the field, the field's Go type: "string:<name>" for a named string type); a
    path's "[]" parts are each list item."""
    for path, struct, go_type in fields:
        for value in _values_at(obj, path.split(".")):
            if not _fits(value, go_type):
                json_path = path.replace("[]", "")
                raise errors.undecodable(
                    kind,
                    version,
                    f"json: cannot unmarshal {_json_kind(value)} into Go struct field "
                    f"{struct}.{json_path} of type {go_type.removeprefix('string:')}",
                )


def immutable_when_set(obj: Obj, old: Obj, fields: tuple[str, ...]) -> list[Cause]:
    """Once `immutable` is true (ConfigMaps, Secrets), it stays so and fields keep
    their values (kube's ValidateConfigMapUpdate / ValidateSecretUpdate)."""
    if not old.get("immutable"):
        return []
    detail = "field is immutable when `immutable` is set"
    causes = [] if obj.get("immutable") else [forbidden("immutable", detail)]
    causes.extend(forbidden(field, detail) for field in fields if obj.get(field) != old.get(field))
    return causes


# apimachinery's TotalAnnotationSizeLimitB: keys and values together.
ANNOTATIONS_MAX_BYTES = 256 * 1024


def validate_labels(labels: dict[str, str], field: str = "metadata.labels") -> list[Cause]:
    """ValidateLabels: qualified-name keys and label values."""
    causes: list[Cause] = []
    for key, value in labels.items():
        causes.extend(invalid_value(field, key, e) for e in names.qualified_name_errors(key))
        causes.extend(invalid_value(field, value, e) for e in names.label_value_errors(value))
    return causes


def validate_annotations(
    annotations: dict[str, str], field: str = "metadata.annotations"
) -> list[Cause]:
    """ValidateAnnotations: qualified-name keys in any case, 256 KiB in all."""
    causes = [
        invalid_value(field, key, e)
        for key in annotations
        for e in names.qualified_name_errors(key.lower())
    ]
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > ANNOTATIONS_MAX_BYTES:
        causes.append(too_long(field, ANNOTATIONS_MAX_BYTES))
    return causes


_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_CONFIG_KEY_ERROR = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
    "'[-._a-zA-Z0-9]+')"
)


def config_key_causes(section: str, key: str) -> list[Cause]:
    causes = []
    if len(key) > 253:
        causes.append(
            invalid_value(f"{section}[{key}]", key, "must be no more than 253 characters")
        )
    if not _CONFIG_KEY.match(key):
        causes.append(invalid_value(f"{section}[{key}]", key, _CONFIG_KEY_ERROR))
    elif key in (".", "..") or key.startswith(".."):
        causes.append(invalid_value(f"{section}[{key}]", key, "must not start with '..'"))
    return causes


PROTOCOLS = ("SCTP", "TCP", "UDP")
PORT_RANGE = "must be between 1 and 65535, inclusive"


def port_causes(port: Obj, number_field: str, at: str) -> list[Cause]:
    """A port's number (IsValidPortNum) and protocol, as containers, Services and
    Endpoints each check theirs."""
    causes = []
    number = port.get(number_field, 0)
    if not isinstance(number, int) or not 1 <= number <= 65535:
        causes.append(invalid_value(f"{at}.{number_field}", number, PORT_RANGE))
    protocol = port.get("protocol", "")
    if protocol not in PROTOCOLS:
        causes.append(not_supported(f"{at}.protocol", protocol, PROTOCOLS))
    return causes


def validate_label_selector(selector: dict[str, Any], field: str) -> list[Cause]:
    """metav1validation.ValidateLabelSelector."""
    causes = validate_labels(selector.get("matchLabels") or {}, f"{field}.matchLabels")
    for i, expression in enumerate(selector.get("matchExpressions") or []):
        at = f"{field}.matchExpressions[{i}]"
        operator, values = expression.get("operator", ""), expression.get("values") or []
        if operator in ("In", "NotIn"):
            if not values:
                detail = "must be specified when `operator` is 'In' or 'NotIn'"
                causes.append(required(f"{at}.values", detail))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                causes.append(forbidden(f"{at}.values", detail))
        else:
            causes.append(not_supported(f"{at}.operator", operator, tuple(SELECTOR_OPERATORS)))
        key = str(expression.get("key", ""))
        causes.extend(invalid_value(f"{at}.key", key, e) for e in names.qualified_name_errors(key))
    return causes


# Finalizers kube knows without a domain prefix.
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def validate_finalizers(finalizers: list[str], field: str = "metadata.finalizers") -> list[Cause]:
    """ValidateFinalizers plus core's check that a bare name is a standard one."""
    causes: list[Cause] = []
    for finalizer in finalizers:
        errors = names.qualified_name_errors(finalizer)
        causes.extend(invalid_value(field, finalizer, e) for e in errors)
        if not errors and finalizer not in STANDARD_FINALIZERS and "/" not in finalizer:
            detail = "name is neither a standard finalizer name nor is it fully qualified"
            causes.append(invalid_value(field, finalizer, detail))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        detail = "finalizer orphan and foregroundDeletion cannot be both set"
        causes.append(invalid_value(field, finalizers, detail))
    return causes


def validate_owner_references(
    references: list[Obj], field: str = "metadata.ownerReferences"
) -> list[Cause]:
    """ValidateOwnerReferences: each names what it points at, and at most one is
    the controller. (kube's field paths here carry no index.)"""
    causes: list[Cause] = []
    controller = ""
    for reference in references:
        api_version = str(reference.get("apiVersion", ""))
        parts = api_version.split("/")
        version = parts[-1] if api_version and len(parts) <= 2 else ""
        if not version:
            detail = "version must not be empty"
            causes.append(invalid_value(f"{field}.apiVersion", api_version, detail))
        for child in ("kind", "name", "uid"):
            if not reference.get(child):
                detail = f"{child} must not be empty"
                causes.append(invalid_value(f"{field}.{child}", reference.get(child, ""), detail))
        if reference.get("controller") is True:
            this = f"{reference.get('kind', '')}/{reference.get('name', '')}"
            if controller:
                detail = (
                    'Only one reference can have Controller set to true. Found "true" in '
                    f"references for {controller} and {this}"
                )
                causes.append(invalid_value(field, references, detail))
            else:
                controller = this
    return causes


def validate_object_meta(
    obj: Obj,
    *,
    namespaced: bool,
    name_is_label: bool,
    name_errors: Callable[[str], list[str]] | None = None,
) -> list[Cause]:
    """apimachinery's ValidateObjectMeta for the fields strata serves; names are
    DNS-1123 labels or subdomains, or what name_errors allows."""
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    name = meta.get("name", "")
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    else:
        check = name_errors or (
            names.dns1123_label_errors if name_is_label else names.dns1123_subdomain_errors
        )
        causes.extend(invalid_value("metadata.name", name, e) for e in check(name))
    namespace = meta.get("namespace", "")
    if namespaced:
        if not namespace:
            causes.append(required("metadata.namespace", ""))
        else:
            causes.extend(
                invalid_value("metadata.namespace", namespace, e)
                for e in names.dns1123_label_errors(namespace)
            )
    causes.extend(validate_labels(meta.get("labels") or {}))
    causes.extend(validate_annotations(meta.get("annotations") or {}))
    causes.extend(validate_finalizers(meta.get("finalizers") or []))
    causes.extend(validate_owner_references(meta.get("ownerReferences") or []))
    return causes


def validate_object_meta_update(obj: Obj, old: Obj) -> list[Cause]:
    meta, old_meta = obj.get("metadata") or {}, old.get("metadata") or {}
    causes = []
    for field in ("name", "namespace", "uid", "deletionTimestamp"):
        if meta.get(field) != old_meta.get(field):
            causes.append(immutable(f"metadata.{field}", meta.get(field)))
    if old_meta.get("deletionTimestamp"):
        old_finalizers = set(old_meta.get("finalizers") or [])
        added = sorted(f for f in meta.get("finalizers") or [] if f not in old_finalizers)
        if added:
            causes.append(
                forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {go_value(added)}",
                )
            )
    return causes
