"""resourceVersion parsing: kube's RVs are etcd revisions as decimal strings."""

from __future__ import annotations


def parse_resource_version(value: str) -> int:
    """0 for "" (unset); the revision otherwise; ValueError when not a revision."""
    if value == "":
        return 0
    if not value.isdigit():
        raise ValueError(f"invalid resource version: {value!r}")
    return int(value)
