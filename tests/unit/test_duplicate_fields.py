"""The paths of fields a JSON body gives twice, as kube's strict decoder names them."""

from __future__ import annotations

from services.registry.duplicate_fields import duplicate_fields


def test_paths_of_duplicates_at_every_depth_in_document_order() -> None:
    body = (
        b'{"kind": "A", "kind": "B", "spec": {"paused": true, "paused": false,'
        b' "containers": [{"name": "a"}, {"name": "b", "image": "x", "image": "y", "image": "z"}]},'
        b' "data": {"k": "1", "j": "2", "k": "3", "j": "4"}}'
    )
    assert duplicate_fields(body) == [
        "kind",
        "spec.paused",
        "spec.containers[1].image",
        "data.k",
        "data.j",
    ]


def test_bodies_without_duplicates_or_not_json_have_none() -> None:
    assert duplicate_fields(b'{"a": {"a": {"a": [1, {"a": 2}]}}}') == []
    assert duplicate_fields(b"[1, 2]") == []
    assert duplicate_fields(b"{not json") == []
    assert duplicate_fields(b"[" * 100_000 + b"]" * 100_000) == []
