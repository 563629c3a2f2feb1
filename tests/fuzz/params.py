"""Hypothesis strategies for the values of the parameters an operation
declares: for each query parameter kube reads, the values it accepts and the
hostile ones next to them (Go's integer edges, selectors a character away from
valid, continue tokens that decode to nonsense, bytes that are no UTF-8); for
any other, values of its declared type; and names and namespaces for the
path, the seeded targets' most of the time, invalid ones the rest."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from tests.fuzz.operations import Parameter

# A value as the query carries it: text (percent-encoded as UTF-8) or bytes
# (percent-encoded as they are, so possibly no UTF-8 at all).
Value = str | bytes
# A name the run resolves to an object it creates just before the request.
VICTIM = "\x00victim"

junk: st.SearchStrategy[Value] = st.text(max_size=24) | st.binary(min_size=1, max_size=8)
INT64_EDGES = [
    "",
    "0",
    "-0",
    "+1",
    "-1",
    "1.5",
    "1e3",
    "0x10",
    " 1",
    "1 ",
    "\uff11",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "-9223372036854775809",
    "1" * 30,
    "1" * 5000,
]
integers: st.SearchStrategy[Value] = (
    st.integers(min_value=-(2**70), max_value=2**70).map(str)
    | st.integers(min_value=-5, max_value=600).map(str)
    | st.sampled_from(INT64_EDGES)
    | junk
)
booleans: st.SearchStrategy[Value] = (
    st.sampled_from(["true", "false", "1", "0", "t", "F", "TRUE", "True", "yes", "", "2", " true"])
    | junk
)
LABEL_KEYS = ["app", "a.b/c", "example.com/x", "x", "", "-bad", "a" * 64, "k/", "/k", "ü"]
LABEL_VALUES = ["web", "", "a" * 64, "-x", "x.y_z", "(", ")", ",", "!", "=", "ü"]


@st.composite
def _requirement(draw: st.DrawFn, keys: list[str], values: list[str]) -> str:
    key = draw(st.sampled_from(keys) | st.text(max_size=8))
    value = draw(st.sampled_from(values) | st.text(max_size=8))
    form = draw(
        st.sampled_from(
            [
                "{k}",
                "!{k}",
                "{k}={v}",
                "{k}=={v}",
                "{k}!={v}",
                "{k} in ({v})",
                "{k} in ({v},{v})",
                "{k} notin ({v})",
                "{k} in ()",
                "{k} in ({v}",
                "{k}>{n}",
                "{k}<{n}",
                "{k} = {v}",
                "{k}==",
                "{k}!",
            ]
        )
    )
    number = draw(st.sampled_from(["1", "-1", "x", "", "1.5", "9" * 30]))
    return form.format(k=key, v=value, n=number)


def _selectors(keys: list[str], values: list[str]) -> st.SearchStrategy[Value]:
    requirements = st.lists(_requirement(keys, values), min_size=1, max_size=4)
    return requirements.map(",".join) | junk


FIELD_KEYS = [
    "metadata.name",
    "metadata.namespace",
    "spec.x",
    "type",
    "involvedObject.kind",
    "status.phase",
    "metadata.name.x",
    "",
]
label_selectors = _selectors(LABEL_KEYS, LABEL_VALUES)
field_selectors = _selectors(FIELD_KEYS, [*LABEL_VALUES, "target", "default", "\\,", "a\\=b"])


def _token(payload: Any) -> str:
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


continue_payloads = st.fixed_dictionaries(
    {},
    optional={
        "v": st.sampled_from(["meta.k8s.io/v1", "v1", ""]) | st.text(max_size=6),
        "rv": st.integers(min_value=-(2**66), max_value=2**66) | st.text(max_size=6),
        "start": st.sampled_from(["target", "../../x", "/", "\x00", ""]) | st.text(max_size=8),
    },
)


def continues(known: list[str]) -> st.SearchStrategy[Value]:
    return (
        st.sampled_from(known or ["x"])
        | continue_payloads.map(_token)
        | st.binary(max_size=20).map(_token)
        | st.sampled_from(["", "=", "e30", "e30=", "!!!", "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"])
        | junk
    )


def resource_versions(known: list[str]) -> st.SearchStrategy[Value]:
    """Mostly ones etcd has (a number past it takes kube 3 s to refuse)."""
    edges = ["", "0", "1", "-1", "00", "+1", "1.5", " 1", "a", "9" * 25, "18446744073709551616"]
    return st.sampled_from(known * 4 + edges + ["99999999"]) | st.text(max_size=8)


@dataclass(frozen=True)
class Choice:
    """A parameter's values kube accepts, and the hostile ones."""

    valid: st.SearchStrategy[Value]
    hostile: st.SearchStrategy[Value]


def _choice(valid: list[str], hostile: list[str] | st.SearchStrategy[Value]) -> Choice:
    bad = hostile if isinstance(hostile, st.SearchStrategy) else st.sampled_from(hostile) | junk
    return Choice(st.sampled_from(valid), bad)


BOOLEANS = _choice(["true", "false", "1", "0"], booleans)
VALID_LABELS = ["app=web", "app", "!app", "app in (a,b)", "app notin (x)", "a.b/c!=x", "app,x=y"]


def named(known_versions: list[str], known_continues: list[str]) -> dict[str, Choice]:
    """The values of each query parameter kube reads, by name."""
    return {
        "labelSelector": _choice(VALID_LABELS, label_selectors),
        "fieldSelector": _choice(
            ["metadata.name=target", "metadata.name!=x", "metadata.namespace==default"],
            field_selectors,
        ),
        "limit": _choice(["1", "2", "0", "500", "-1"], integers),
        "continue": _choice(known_continues, continues(known_continues)),
        "resourceVersion": _choice([*known_versions, "", "0"], resource_versions(known_versions)),
        "resourceVersionMatch": _choice(["", "NotOlderThan", "Exact"], ["exact", "Any"]),
        "timeoutSeconds": _choice(["1", "2"], integers),
        "dryRun": _choice(["All"], ["all", "", "None", "All,All"]),
        "fieldManager": _choice(
            ["fuzz", "kubectl"], ["", "x" * 128, "x" * 129, "\u00e9" * 65, "a\nb"]
        ),
        "fieldValidation": _choice(["Ignore", "Warn", "Strict", ""], ["strict", "Drop"]),
        "propagationPolicy": _choice(["Orphan", "Background", "Foreground"], ["", "orphan"]),
        "gracePeriodSeconds": _choice(["0", "1", "30"], integers),
        "orphanDependents": BOOLEANS,
        "includeObject": _choice(["None", "Metadata", "Object"], ["", "none"]),
        "watch": BOOLEANS,
        "allowWatchBookmarks": BOOLEANS,
        "sendInitialEvents": BOOLEANS,
        "force": BOOLEANS,
        "pretty": BOOLEANS,
    }


def of_type(parameter: Parameter) -> Choice:
    """Values for a parameter the fuzzer has no words for: its declared type's."""
    if parameter.type == "integer":
        return _choice(["0", "1"], integers)
    if parameter.type == "boolean":
        return BOOLEANS
    return Choice(st.text(max_size=8), junk)


# Query parameters an operation may not declare, which kube reads anyway (a
# deletecollection's dryRun and propagationPolicy, which kube's document
# declares) or ignores.
UNDECLARED = [
    "orphanDependents",
    "includeObject",
    "timeout",
    "watch",
    "limit",
    "dryRun",
    "propagationPolicy",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "as",
    "x",
]
# What a hand-made query may end with: percent signs that encode nothing,
# empty keys and values, separators.
RAW_TAILS = ["", "", "", "&", "&&", "&=", "&=x", "&%", "&%zz", "&a=%GG", "&;", "&watch", "&limit"]


def _mostly(usual: str, hostile: list[str]) -> st.SearchStrategy[str]:
    """usual three times in four, else a hostile one."""
    others = st.sampled_from(hostile) | st.text(min_size=1, max_size=12)
    return st.one_of(st.just(usual), st.just(usual), st.just(usual), others)


def namespaces(seeded: str) -> st.SearchStrategy[str]:
    """A namespace for the path: mostly the run's own."""
    hostile = [
        "default",
        "missing",
        "",
        "UPPER",
        "a" * 64,
        "a_b",
        "..",
        "-a",
        "a-",
        "kube-system",
        "a/b",
        "%",
    ]
    return _mostly(seeded, hostile)


def names(seeded: str, *, victims: bool) -> st.SearchStrategy[str]:
    """A name for the path: the seeded target's most of the time (a victim's
    instead where the request deletes), else missing or invalid ones."""
    first = VICTIM if victims else seeded
    hostile = ["missing", "", "UPPER", "a" * 254, "a" * 300, "..", ".", "a b", "a/b", "%2F", "ü"]
    return _mostly(first, hostile)


def truthy(value: str | None) -> bool:
    """Whether kube reads a boolean query parameter as true: present, and
    neither "0" nor "false" in any case ("" is true)."""
    return value is not None and value != "0" and value.lower() != "false"
