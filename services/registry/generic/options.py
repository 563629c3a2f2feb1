"""What a list or watch asks for and what a list answers: the selection (a
namespace and selectors), paging, rendering as a Table, and apimachinery's
checks of list and watch options (ValidateListOptions: 422 ListOptions)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from services.registry.generic.declarations import Resource
from strata.api import errors
from strata.api.causes import forbidden, not_supported
from strata.api.selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)
from strata.storage import EXACT, NOT_OLDER_THAN, Predicate


@dataclass(frozen=True, kw_only=True)
class Selection:
    """Which objects a list or watch returns: a namespace (or all) and selectors,
    checked here and evaluated by storage."""

    namespace: str = ""
    labels: LabelSelector = dataclasses.field(default_factory=LabelSelector)
    fields: FieldSelector = dataclasses.field(default_factory=FieldSelector)
    predicate: Predicate = dataclasses.field(default_factory=Predicate)


@dataclass(frozen=True, kw_only=True)
class Paging:
    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    # Given only to be refused: a list must not carry sendInitialEvents.
    send_initial_events: bool | None = None


@dataclass(frozen=True, kw_only=True)
class Page:
    items: list[bytes]
    resource_version: int
    table: bytes = b""
    continue_token: str = ""
    remaining_item_count: int | None = None


@dataclass(frozen=True, kw_only=True)
class Rendering:
    as_table: bool = False
    include_object: str = ""


def selection(
    resource: Resource,
    namespace: str,
    label_selector: str,
    field_selector: str,
    *,
    owned_or_deleting: bool = False,
) -> Selection:
    """The selectors of a request, parsed (400 for one that is not) and as
    storage evaluates them."""
    return Selection(
        namespace=namespace if resource.namespaced else "",
        labels=parse_label_selector(label_selector),
        fields=parse_field_selector(
            field_selector,
            resource.field_selectors,
            field_label_conversion=resource.field_label_conversion,
        ),
        predicate=Predicate(
            label_selector=label_selector,
            field_selector=field_selector,
            owned_or_deleting=owned_or_deleting,
        ),
    )


def check_list_options(
    resource_version: str,
    match: str,
    continue_token: str,
    send_initial_events: bool | None = None,
) -> None:
    """apimachinery's ValidateListOptions for a list: 422 ListOptions."""
    causes = []
    if match:
        if not resource_version:
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if continue_token:
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
        if match not in (NOT_OLDER_THAN, EXACT):
            causes.append(not_supported("resourceVersionMatch", match, (EXACT, NOT_OLDER_THAN, "")))
        if match == EXACT and resource_version == "0":
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
    if send_initial_events is not None:
        causes.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    if causes:
        raise errors.invalid("ListOptions", "", causes, "meta.k8s.io")


def check_watch_options(match: str, continue_token: str, send_initial_events: bool | None) -> None:
    """apimachinery's ValidateListOptions for a watch (the WatchList feature on):
    422 ListOptions."""
    causes = []
    if send_initial_events is not None and match != NOT_OLDER_THAN:
        causes.append(
            forbidden(
                "resourceVersionMatch",
                f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}",
            )
        )
    if match:
        if send_initial_events is None:
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is "
                    "provided",
                )
            )
        if match != NOT_OLDER_THAN:
            causes.append(not_supported("resourceVersionMatch", match, (NOT_OLDER_THAN,)))
        if continue_token:
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                )
            )
    if causes:
        raise errors.invalid("ListOptions", "", causes, "meta.k8s.io")
