"""Checks on read requests that every implementation makes the same way, and
the compiled form of a Predicate, so the storage service and the cacher
refuse the same inputs with the same typed errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from strata.api.errors import StatusError
from strata.api.selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from strata.api.versions import parse_resource_version
from strata.proto.storage.v1 import storage_pb2
from strata.storage._errors import InvalidRequest
from strata.storage._interface import EXACT, MATCHES, ListOptions, Predicate, WatchOptions

FIELDS = frozenset({"metadata.name", "metadata.namespace"})


def revision(key: str, value: str) -> int:
    """The revision a resourceVersion names (0 for ""); InvalidRequest if none."""
    try:
        return parse_resource_version(value)
    except ValueError:
        raise InvalidRequest(key, f"invalid resource version: {value!r}") from None


def check_match(key: str, resource_version: str, match: str) -> None:
    if match not in MATCHES:
        raise InvalidRequest(
            key,
            f'unsupported resourceVersionMatch "{match}": supported values: '
            '"Exact", "NotOlderThan", ""',
        )
    if match and not resource_version:
        raise InvalidRequest(
            key, "resourceVersionMatch is forbidden unless resourceVersion is given"
        )
    if match == EXACT and resource_version == "0":
        raise InvalidRequest(
            key, 'resourceVersionMatch "Exact" is forbidden for resourceVersion "0"'
        )


def check_list(prefix: str, opts: ListOptions) -> None:
    revision(prefix, opts.resource_version)
    check_match(prefix, opts.resource_version, opts.resource_version_match)
    if opts.limit < 0:
        raise InvalidRequest(prefix, f"limit must not be negative, got {opts.limit}")
    if opts.continue_token and opts.resource_version not in ("", "0"):
        raise InvalidRequest(
            prefix, "specifying resource version is not allowed when using continue"
        )
    if opts.continue_token and opts.resource_version_match:
        raise InvalidRequest(prefix, "resourceVersionMatch is forbidden when continue is provided")


def sends_initial_state(since: int, opts: WatchOptions) -> bool:
    """Whether a watch from since starts with the current state as ADDED events:
    when it asks (a watch-list), or, saying nothing, when it watches from "" or
    "0" (kube's getAllEventsSinceLocked). sendInitialEvents=false from "" or "0"
    starts at the current revision with no state."""
    if opts.send_initial_events is None:
        return since == 0
    return opts.send_initial_events


def ends_initial_events(opts: WatchOptions) -> bool:
    """Whether the initial state ends with an initial-events-end BOOKMARK: on a
    watch-list that allows bookmarks (kube's setInitialEventsEndBookmarkIfRequested)."""
    return bool(opts.send_initial_events) and opts.progress_notify


@dataclass(frozen=True)
class Matcher:
    labels: LabelSelector
    fields: FieldSelector
    owned_or_deleting: bool = False

    @property
    def everything(self) -> bool:
        return self.labels.empty and self.fields.empty and not self.owned_or_deleting

    def __call__(self, obj: storage_pb2.Object) -> bool:
        if self.owned_or_deleting and not (obj.owned or obj.deleting):
            return False
        if not self.labels.empty and not self.labels.matches(obj.labels):
            return False
        if not self.fields.empty:
            return self.fields.matches(
                {"metadata.name": obj.name, "metadata.namespace": obj.namespace}
            )
        return True


def compile_predicate(key: str, predicate: Predicate) -> Matcher:
    try:
        return Matcher(
            parse_label_selector(predicate.label_selector),
            parse_field_selector(predicate.field_selector, FIELDS),
            predicate.owned_or_deleting,
        )
    except StatusError as e:
        raise InvalidRequest(key, e.message) from None


Event = storage_pb2.WatchEvent


def seen_as(
    matches: Matcher,
    kind: storage_pb2.WatchEvent.Type.ValueType,
    current: storage_pb2.Object | None,
    previous: Callable[[], storage_pb2.Object | None],
) -> storage_pb2.WatchEvent.Type.ValueType | None:
    """What a watcher with this predicate sees of a change (kube's watch filtering):
    the event type, or None for nothing.

    kind is what happened to the key: ADDED (created), MODIFIED or DELETED;
    current is the new state (None for DELETED), previous gives the old one and
    is called only when needed. An object that starts matching is ADDED, one that
    stops is DELETED (carrying its old state), one that never matched is not seen.
    """
    if kind == Event.DELETED:
        old = previous()
        return Event.DELETED if old is not None and matches(old) else None
    assert current is not None
    if matches.everything:
        return kind
    now = matches(current)
    before = kind == Event.MODIFIED and (old := previous()) is not None and matches(old)
    if now:
        return Event.MODIFIED if before else Event.ADDED
    return Event.DELETED if before else None


def through(
    matches: Matcher,
    kind: storage_pb2.WatchEvent.Type.ValueType,
    current: storage_pb2.Object | None,
    previous: Callable[[], storage_pb2.Object | None],
    at: int,
) -> storage_pb2.WatchEvent | None:
    """The change as a watcher with this predicate sees it (see seen_as), as an
    event at revision at; a DELETED one carries the old state."""
    remembered: list[storage_pb2.Object | None] = []

    def old() -> storage_pb2.Object | None:
        if not remembered:
            remembered.append(previous())
        return remembered[0]

    seen = seen_as(matches, kind, current, old)
    if seen is None:
        return None
    return Event(type=seen, object=old() if seen == Event.DELETED else current, resource_version=at)
