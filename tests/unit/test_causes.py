"""Field errors' messages as kube v1.36 writes them (apimachinery's
field.Error): each expected message here was recorded from kube-apiserver."""

from __future__ import annotations

import pytest

from strata.api.causes import go_value, invalid_value, not_supported


@pytest.mark.parametrize(
    ("value", "supported", "message"),
    [
        # A Service's spec.type "Bogus" (a named string type: JSON).
        (
            "Bogus",
            ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"),
            'Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", '
            '"LoadBalancer", "NodePort"',
        ),
        (
            'a"b<c',
            ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"),
            'Unsupported value: "a\\"b\\u003cc": supported values: "ClusterIP", "ExternalName", '
            '"LoadBalancer", "NodePort"',
        ),
        # ?dryRun=Bogus, ?dryRun=All&dryRun=Some, ?dryRun=<x> (a []string: JSON).
        (["Bogus"], ("All",), 'Unsupported value: ["Bogus"]: supported values: "All"'),
        (["All", "Some"], ("All",), 'Unsupported value: ["All","Some"]: supported values: "All"'),
        (["<x>"], ("All",), 'Unsupported value: ["\\u003cx\\u003e"]: supported values: "All"'),
        # ?fieldValidation=Bogus: "" among the supported values.
        (
            "Bogus",
            ("", "Ignore", "Strict", "Warn"),
            'Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"',
        ),
    ],
)
def test_unsupported_values_as_kube_writes_them(
    value: object, supported: tuple[str, ...], message: str
) -> None:
    assert not_supported("f", value, supported).message == message


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        # metadata.finalizers ["orphan", "foregroundDeletion"], and with "a<b" first.
        (["orphan", "foregroundDeletion"], '["orphan","foregroundDeletion"]'),
        (["a<b", "orphan"], '["a\\u003cb","orphan"]'),
        ("a<b", '"a<b"'),  # a plain string: Go's %q, no HTML escapes
        ('say "hi"', '"say \\"hi\\""'),
        (True, "true"),
        (None, "null"),
        (5, "5"),
        ({"b": 1, "a": 2}, '{"a":2,"b":1}'),
    ],
)
def test_invalid_values_as_kube_writes_them(value: object, shown: str) -> None:
    assert invalid_value("f", value, "why").message == f"Invalid value: {shown}: why"


def test_go_syntax_for_kubes_own_messages() -> None:
    """%#v of a []string (kube's "found new finalizers []string{...}")."""
    assert go_value(["example.com/c", 'q"']) == '[]string{"example.com/c", "q\\""}'
