"""A CRD property's `pattern` through the real gateway and services, as
kube-apiserver v1.36 answered: RE2 as Go's regexp (a pattern that makes a
backtracking engine hang, `^(a+)+$` against forty `a` and a `!`, is refused at
once and holds up no other request), matched anywhere in the value, and a CRD
whose pattern Go's regexp does not compile refused with Go's error."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from strata.etcd import Etcd
from tests.support.registry_tester import Obj, answer, new_namespace, refused, until

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
REDOS = "^(a+)+$"
# Property -> pattern.
PROPERTIES = {"x": REDOS, "line": "^abc$", "anywhere": "b"}


def _version(name: str, properties: dict[str, str], *, storage: bool = True) -> Obj:
    fields = {p: {"type": "string", "pattern": pattern} for p, pattern in properties.items()}
    spec = {"type": "object", "properties": fields}
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}},
    }


def _crd(group: str, *versions: Obj) -> Obj:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"words.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "words", "kind": "Word"},
            "versions": list(versions),
        },
    }


def _established(obj: Obj) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


@pytest.fixture(scope="module")
async def words(http: aiohttp.ClientSession) -> AsyncIterator[tuple[str, str]]:
    """A Word CRD with PROPERTIES: its group, and its collection in a namespace."""
    group = f"t{uuid.uuid4().hex[:8]}.example.com"
    await answer(http, "POST", CRDS, 201, json=_crd(group, _version("v1", PROPERTIES)))
    await until(http, f"{CRDS}/words.{group}", _established, within=10)
    namespace = await new_namespace(http, "patterns")
    collection = f"/apis/{group}/v1/namespaces/{namespace}/words"
    await until(http, collection, lambda _: True, within=10, absent_ok=True)
    yield group, collection
    await answer(http, "DELETE", f"{CRDS}/words.{group}", 200)


def _word(group: str, name: str, **spec: str) -> Obj:
    return {"apiVersion": f"{group}/v1", "kind": "Word", "metadata": {"name": name}, "spec": spec}


def _invalid_status(kind: str, group: str, name: str, causes: list[Obj]) -> Obj:
    """kube's 422 for a write of name with causes (one, as here)."""
    (cause,) = causes
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'{kind}.{group} "{name}" is invalid: {cause["field"]}: {cause["message"]}',
        "reason": "Invalid",
        "details": {"name": name, "group": group, "kind": kind, "causes": causes},
        "code": 422,
    }


async def test_a_catastrophic_pattern_is_refused_while_other_requests_are_answered(
    http: aiohttp.ClientSession, system_etcd: Etcd, words: tuple[str, str]
) -> None:
    group, collection = words
    body = _word(group, "bad", x="a" * 40 + "!")
    creating = asyncio.create_task(refused(http, system_etcd, "POST", collection, json=body))
    listed = await answer(http, "GET", "/api/v1/namespaces", 200)
    assert listed["kind"] == "NamespaceList"
    shown = '"' + "a" * 40 + '!"'
    cause = {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: spec.x in body should match '{REDOS}'",
        "field": "spec.x",
    }
    assert await creating == _invalid_status("Word", group, "bad", [cause])


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("line", "abc\n", '"abc\\n"'),  # Go's $ is the end of the text, not of a line
        ("anywhere", "xyz", '"xyz"'),
    ],
)
async def test_a_value_its_pattern_does_not_match_is_refused(
    http: aiohttp.ClientSession,
    system_etcd: Etcd,
    words: tuple[str, str],
    field: str,
    value: str,
    shown: str,
) -> None:
    group, collection = words
    body = _word(group, f"no-{field}", **{field: value})
    status = await refused(http, system_etcd, "POST", collection, json=body)
    detail = f"spec.{field} in body should match '{PROPERTIES[field]}'"
    cause = {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {shown}: {detail}",
        "field": f"spec.{field}",
    }
    assert status == _invalid_status("Word", group, f"no-{field}", [cause])


async def test_matching_values_are_accepted(
    http: aiohttp.ClientSession, words: tuple[str, str]
) -> None:
    group, collection = words
    body = _word(group, "good", x="a" * 40, line="abc", anywhere="abc")  # "b" anywhere in it
    created = await answer(http, "POST", collection, 201, json=body)
    assert created["spec"] == body["spec"]


# kube's words after "error parsing regexp: " for a CRD with each pattern.
UNCOMPILED = [
    ("(", "missing closing ): `(`"),
    ("a{2000}", "invalid repeat count: `{2000}`"),
    ("(?=x)", "invalid or unsupported Perl syntax: `(?=`"),
    ("\\C", "invalid escape sequence: `\\C`"),
]


@pytest.mark.parametrize(("pattern", "error"), UNCOMPILED)
async def test_a_crd_whose_pattern_go_does_not_compile_is_refused(
    http: aiohttp.ClientSession, system_etcd: Etcd, pattern: str, error: str
) -> None:
    # Two versions, whose schemas differ: kube names the version's own schema
    # (with one, it names spec.validation, the internal form's).
    group = f"t{uuid.uuid4().hex[:8]}.example.com"
    v1 = _version("v1", {"x": pattern})
    v2 = _version("v2", {"x": "^b$"}, storage=False)
    body = _crd(group, v1, v2)
    status = await refused(http, system_etcd, "POST", CRDS, json=body)
    shown = pattern.replace("\\", "\\\\")
    cause: dict[str, Any] = {
        "reason": "FieldValueInvalid",
        "message": f'Invalid value: "{shown}": must be a valid regular expression, but '
        f"isn't: error parsing regexp: {error}",
        "field": "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].pattern",
    }
    expected = _invalid_status(
        "CustomResourceDefinition", "apiextensions.k8s.io", f"words.{group}", [cause]
    )
    assert status == expected
