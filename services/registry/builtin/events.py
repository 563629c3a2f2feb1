"""core/v1 Events: kube's legacy field rules (what the core/v1 endpoint checks;
the stricter rules belong to events.k8s.io) and kubectl's columns. Events are
written often and matter briefly, so the registry stores them with a TTL
(--event-ttl, kube's 1h), renewed by every write.

The Event's declaration (a `Resource`, with kubectl's columns) is here too;
services/registry/builtin/resources.py gathers it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from services.registry.builtin import kind_schemas
from services.registry.generic.declarations import NAME_COLUMN, Column, Resource
from services.registry.generic.strategy import (
    Obj,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api import meta, names
from strata.api.causes import invalid_value, required
from strata.api.errors import Cause

# kube's limits on an event's fields (pkg/apis/core/validation/events.go).
REPORTING_INSTANCE_MAX = 128
ACTION_MAX = 128
REASON_MAX = 128
NOTE_MAX = 1024

GO_TYPES = (
    ("involvedObject", "Event", "v1.ObjectReference"),
    *(
        (f"involvedObject.{f}", "ObjectReference", "string")
        for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
    ),
    *((f, "Event", "string") for f in ("reason", "message", "type", "action")),
    ("source", "Event", "v1.EventSource"),
    ("count", "Event", "int32"),
    ("reportingComponent", "Event", "string"),
    ("reportingInstance", "Event", "string"),
)


def _too_long(field: str, limit: int) -> Cause:
    return invalid_value(field, "", f"can have at most {limit} characters")


def validate_event(obj: Obj) -> list[Cause]:
    """legacyValidateEvent, for a core/v1 request: an event without eventTime
    (the old kind) only has to agree with its object's namespace; a new one
    names who reports it and what happened."""
    namespace = (obj.get("metadata") or {}).get("namespace", "")
    involved: dict[str, Any] = obj.get("involvedObject") or {}
    involved_namespace = involved.get("namespace", "")
    mismatch = invalid_value(
        "involvedObject.namespace", involved_namespace, "does not match event.namespace"
    )
    causes: list[Cause] = []
    if not obj.get("eventTime"):
        if not involved_namespace:
            if namespace not in ("", "default"):
                causes.append(mismatch)
        elif namespace != involved_namespace:
            causes.append(mismatch)
    else:
        if not involved_namespace and namespace not in ("default", "kube-system"):
            causes.append(mismatch)
        component = obj.get("reportingComponent", "")
        if not component:
            causes.append(required("reportingComponent"))
        causes.extend(
            invalid_value("reportingComponent", component, e)
            for e in names.qualified_name_errors(component)
        )
        for field, limit in (("reportingInstance", REPORTING_INSTANCE_MAX), ("action", ACTION_MAX)):
            if not obj.get(field):
                causes.append(required(field))
            if len(obj.get(field) or "") > limit:
                causes.append(_too_long(field, limit))
        if not obj.get("reason"):
            causes.append(required("reason"))
        if len(obj.get("reason") or "") > REASON_MAX:
            causes.append(_too_long("reason", REASON_MAX))
        if len(obj.get("message") or "") > NOTE_MAX:
            causes.append(_too_long("message", NOTE_MAX))
    causes.extend(
        invalid_value("namespace", namespace, e) for e in names.dns1123_subdomain_errors(namespace)
    )
    return causes


class EventStrategy:
    go_types = GO_TYPES
    namespaced = True

    def prepare_for_create(self, obj: Obj) -> None:
        pass

    def validate(self, obj: Obj) -> list[Cause]:
        # The event's own rules first, then the generic metadata check every
        # create gets (kube's BeforeCreate: names need only be path segments).
        return validate_event(obj) + validate_object_meta(
            obj, namespaced=True, name_is_label=False, name_errors=names.path_segment_errors
        )

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        pass

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return self.validate(obj) + validate_object_meta_update(obj, old)


def first_seen_cell(obj: Obj) -> str:
    return meta.age(obj.get("firstTimestamp") or obj.get("eventTime"))


def last_seen_cell(obj: Obj) -> str:
    series = obj.get("series")
    if series:
        return meta.age(series.get("lastObservedTime"))
    if obj.get("lastTimestamp"):
        return meta.age(obj["lastTimestamp"])
    return first_seen_cell(obj)


def object_cell(obj: Obj) -> str:
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    return f"{kind}/{involved['name']}" if involved.get("name") else kind


def source_cell(obj: Obj) -> str:
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    instance = source.get("host") or obj.get("reportingInstance") or ""
    return f"{component}, {instance}" if instance else component


def count_cell(obj: Obj) -> int:
    series = obj.get("series")
    if series:
        return int(series.get("count") or 0)
    return int(obj.get("count") or 0) or 1


EVENTS = Resource(
    schema=kind_schemas.EVENT,
    group="",
    version="v1",
    name="events",
    singular="event",
    kind="Event",
    namespaced=True,
    strategy=EventStrategy(),
    short_names=("ev",),
    garbage_collected=False,
    field_label_conversion=True,
    columns=(
        Column(
            name="Last Seen",
            type="string",
            description="The time at which the most recent occurrence of this event was recorded.",
            cell=last_seen_cell,
        ),
        Column(
            name="Type",
            type="string",
            description="Type of this event (Normal, Warning), new types could be added in the "
            "future",
            path="type",
        ),
        Column(
            name="Reason",
            type="string",
            description="This should be a short, machine understandable string that gives the "
            "reason for the transition into the object's current status.",
            path="reason",
        ),
        Column(
            name="Object",
            type="string",
            description="The object that this event is about.",
            cell=object_cell,
        ),
        Column(
            name="Subobject",
            type="string",
            priority=1,
            description="If referring to a piece of an object instead of an entire object, this "
            "string should contain a valid JSON/Go field access statement, such as "
            "desiredState.manifest.containers[2].",
            path="involvedObject.fieldPath",
        ),
        Column(
            name="Source",
            type="string",
            priority=1,
            description="The component reporting this event. Should be a short machine "
            "understandable string.",
            cell=source_cell,
        ),
        Column(
            name="Message",
            type="string",
            description="A human-readable description of the status of this operation.",
            cell=lambda obj: str(obj.get("message") or "").strip(),
        ),
        Column(
            name="First Seen",
            type="string",
            priority=1,
            description="The time at which the event was first recorded. (Time of server "
            "receipt is in TypeMeta.)",
            cell=first_seen_cell,
        ),
        Column(
            name="Count",
            type="string",
            priority=1,
            description="The number of times this event has occurred.",
            cell=count_cell,
        ),
        dataclasses.replace(NAME_COLUMN, priority=1),
    ),
)
