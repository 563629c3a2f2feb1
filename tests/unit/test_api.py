"""apimachinery helpers: names, selectors, ages, resourceVersions."""

from __future__ import annotations

import pytest

from strata.api import meta, names
from strata.api.errors import StatusError
from strata.api.selectors import parse_field_selector, parse_label_selector
from strata.api.versions import parse_resource_version


@pytest.mark.parametrize("value", ["a", "my-name", "123-abc", "a" * 63])
def test_valid_labels(value: str) -> None:
    assert names.dns1123_label_errors(value) == []


@pytest.mark.parametrize("value", ["", "A", "-a", "a-", "a.b", "a_b", "a" * 64])
def test_invalid_labels(value: str) -> None:
    assert names.dns1123_label_errors(value)


@pytest.mark.parametrize("value", ["example.com", "a.b-c.d", "a" * 253])
def test_valid_subdomains(value: str) -> None:
    assert names.dns1123_subdomain_errors(value) == []


@pytest.mark.parametrize("value", ["", "a..b", ".a", "a.", "UPPER", "a" * 254])
def test_invalid_subdomains(value: str) -> None:
    assert names.dns1123_subdomain_errors(value)


def test_generated_names_keep_the_prefix_and_fit() -> None:
    generated = {names.generate_name("web-") for _ in range(50)}
    assert all(n.startswith("web-") and len(n) == 9 for n in generated)
    assert len(generated) > 40
    assert len(names.generate_name("x" * 100)) == 63


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "0s"), (59, "59s"), (119, "119s"), (120, "2m"), (150, "2m30s"), (600, "10m"),
     (3 * 3600, "3h"), (3 * 3600 + 120, "3h2m"), (9 * 3600, "9h"), (50 * 3600, "2d2h"),
     (10 * 86400, "10d"), (800 * 86400, "2y70d"), (-0.5, "0s"), (-5, "<invalid>")],
)  # fmt: skip
def test_human_duration_matches_apimachinery(seconds: float, shown: str) -> None:
    assert meta.human_duration(seconds) == shown


def test_label_selector_grammar() -> None:
    selector = parse_label_selector("app=web, tier in (front,back), !legacy, env!=prod, ready")
    assert selector.matches({"app": "web", "tier": "front", "env": "dev", "ready": ""})
    assert not selector.matches({"app": "web", "tier": "db", "ready": ""})
    assert not selector.matches({"app": "web", "tier": "front", "legacy": "1", "ready": ""})
    assert not selector.matches({"app": "web", "tier": "front", "env": "prod", "ready": ""})
    assert not selector.matches({"app": "web", "tier": "front"})
    assert parse_label_selector("x notin (a)").matches({})
    assert parse_label_selector("n>3").matches({"n": "4"})
    assert not parse_label_selector("n<3").matches({"n": "4"})
    assert parse_label_selector("").empty


@pytest.mark.parametrize("text", ["a=b,", "a in (b", "=x", "a==b==c", "bad key=x", "n>x"])
def test_malformed_label_selectors_are_400(text: str) -> None:
    with pytest.raises(StatusError) as raised:
        parse_label_selector(text)
    assert raised.value.code == 400


def test_field_selectors() -> None:
    supported = frozenset({"metadata.name", "metadata.namespace"})
    selector = parse_field_selector("metadata.name=a,metadata.namespace!=kube-system", supported)
    assert selector.matches({"metadata.name": "a", "metadata.namespace": "default"})
    assert not selector.matches({"metadata.name": "a", "metadata.namespace": "kube-system"})
    assert selector.exact("metadata.name") == "a"
    assert selector.exact("metadata.namespace") is None
    with pytest.raises(StatusError) as raised:
        parse_field_selector("spec.x=1", supported)
    assert raised.value.message == (
        '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


def test_resource_versions() -> None:
    assert parse_resource_version("") == 0
    assert parse_resource_version("42") == 42
    for bad in ("-1", "abc", "1.5"):
        with pytest.raises(ValueError):
            parse_resource_version(bad)
