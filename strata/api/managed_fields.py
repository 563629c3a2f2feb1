"""metadata.managedFields: which field manager owns which fields of an object,
as kube's field manager keeps them (FieldsV1 sets), and what an ordinary write
(operation Update) does to them. Server-side apply's own rules build on these
(services/gateway/apply.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Obj = dict[str, Any]
Path = tuple[str, ...]
APPLY, UPDATE = "Apply", "Update"
# Fields no manager owns: the object's identity and what the server keeps.
_IDENTITY: frozenset[Path] = frozenset(
    {
        ("apiVersion",),
        ("kind",),
        ("metadata", "name"),
        ("metadata", "namespace"),
        ("metadata", "uid"),
        ("metadata", "resourceVersion"),
        ("metadata", "generation"),
        ("metadata", "creationTimestamp"),
        ("metadata", "deletionTimestamp"),
        ("metadata", "deletionGracePeriodSeconds"),
        ("metadata", "selfLink"),
        ("metadata", "managedFields"),
    }
)


def leaves(obj: Obj, prefix: Path = ()) -> set[Path]:
    """The fields a configuration sets: every value that is not a non-empty map."""
    found: set[Path] = set()
    for name, value in obj.items():
        path = (*prefix, name)
        if path in _IDENTITY or (not prefix and name == "status"):
            continue
        if isinstance(value, dict) and value:
            found |= leaves(value, path)
        else:
            found.add(path)
    return found


def to_fields_v1(paths: set[Path]) -> Obj:
    """A field set as managedFields' FieldsV1 ({"f:data": {"f:a": {}}})."""
    tree: Obj = {}
    for path in sorted(paths):
        node = tree
        for name in path:
            node = node.setdefault(f"f:{name}", {})
    return tree


def from_fields_v1(tree: Any, prefix: Path = ()) -> set[Path]:
    """The fields a FieldsV1 tree names (the leaves; "." marks a node owned itself)."""
    found: set[Path] = set()
    if not isinstance(tree, dict):  # a client's nonsense owns nothing
        return found
    for key, child in tree.items():
        if key == ".":
            found.add(prefix)
        elif key.startswith("f:"):
            path = (*prefix, key[2:])
            found |= from_fields_v1(child, path) if isinstance(child, dict) and child else {path}
        else:  # list items by key, value or index: their list is owned
            found.add(prefix)
    return found


def overlap(a: Path, b: Path) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


MISSING = object()


def get(obj: Any, path: Path) -> Any:
    for name in path:
        if not isinstance(obj, dict) or name not in obj:
            return MISSING
        obj = obj[name]
    return obj


@dataclass
class Entry:
    """One managedFields entry, its fields decoded."""

    raw: Obj
    fields: set[Path]

    @property
    def manager(self) -> str:
        return str(self.raw.get("manager", ""))

    @property
    def is_apply(self) -> bool:
        return self.raw.get("operation") == APPLY

    def described(self) -> str:
        """The manager as kube's conflict messages name it."""
        name = f'"{self.manager}"'
        if subresource := self.raw.get("subresource"):
            name += f' with subresource "{subresource}"'
        if self.raw.get("operation") == UPDATE:
            name += f" using {self.raw.get('apiVersion', '')}"
            if at := self.raw.get("time"):
                name += f" at {at}"
        return name


def entries(live: Obj) -> list[Entry]:
    managed = (live.get("metadata") or {}).get("managedFields") or []
    return [
        Entry(dict(raw), from_fields_v1(raw.get("fieldsV1") or {}))
        for raw in managed
        if isinstance(raw, dict)
    ]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def entry(manager: str, operation: str, api_version: str, fields: set[Path]) -> Obj:
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": now(),
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields_v1(fields),
    }


def record_update(old: Obj | None, new: Obj, manager: str, api_version: str) -> None:
    """new's managedFields after an ordinary write by manager: the fields it set
    or changed are its own (operation Update) and no one else's; fields it
    removed are no one's. A write that leaves managedFields out keeps the old
    ones; without a manager (server-side apply, which keeps them itself, or the
    server's own writes) nothing else changes."""
    metadata = new.setdefault("metadata", {})
    if metadata.get("managedFields") is None:
        kept = ((old or {}).get("metadata") or {}).get("managedFields")
        if kept:
            metadata["managedFields"] = kept
        else:
            metadata.pop("managedFields", None)
    if not manager:
        return
    before: Obj = old or {}
    after = leaves(new)
    changed = {p for p in after if get(before, p) != get(new, p)}
    removed = leaves(before) - after
    current = entries(new)
    mine = next(
        (
            e
            for e in current
            if e.manager == manager
            and not e.is_apply
            and e.raw.get("apiVersion") == api_version
            and not e.raw.get("subresource")
        ),
        None,
    )
    result: list[Obj] = []
    for e in current:
        if e is mine:
            continue
        kept_fields = {f for f in e.fields if not any(overlap(f, p) for p in changed | removed)}
        if kept_fields == e.fields:
            result.append(e.raw)
        elif kept_fields:
            result.append({**e.raw, "fieldsV1": to_fields_v1(kept_fields)})
    owned = ((mine.fields if mine else set()) - removed) | changed
    if owned:
        result.append(entry(manager, UPDATE, api_version, owned))
    if result:
        metadata["managedFields"] = result
    else:
        metadata.pop("managedFields", None)
