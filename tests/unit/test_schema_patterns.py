"""Schema patterns without a server, as kube-apiserver v1.36 answered them: the
error Go's regexp gives for a pattern it does not compile (a CRD's 422 quotes
it), what a pattern matches (RE2, anywhere in the value, Go's `$`), and a
stored pattern that does not compile."""

from __future__ import annotations

import pytest

from services.registry.generic import patterns
from services.registry.generic.schema import validate

# kube's "must be a valid regular expression, but isn't: error parsing regexp: ..."
# for a CRD with each pattern (None: the CRD was accepted).
KUBE_ERRORS: list[tuple[str, str | None]] = [
    ("(", "missing closing ): `(`"),
    (")", "unexpected ): `)`"),
    ("[a", "missing closing ]: `[a`"),
    ("a{2000}", "invalid repeat count: `{2000}`"),
    ("(a{10}){101}", "invalid repeat count: `{101}`"),
    ("(?=x)", "invalid or unsupported Perl syntax: `(?=`"),
    ("(?<=x)", "invalid named capture: `(?<=x)`"),
    ("(?<=a)b>", "invalid named capture: `(?<=a)b>`"),
    ("x(?<!y", "invalid named capture: `(?<!y`"),
    ("(a)\\1", "invalid escape sequence: `\\1`"),
    ("a**", "invalid nested repetition operator: `**`"),
    ("a++", "invalid nested repetition operator: `++`"),
    ("*", "missing argument to repetition operator: `*`"),
    ("\\Z", "invalid escape sequence: `\\Z`"),
    ("\\C", "invalid escape sequence: `\\C`"),
    ("[\\C]", "invalid escape sequence: `\\C`"),
    ("[]\\C]", "invalid escape sequence: `\\C`"),
    ("[[:alpha:]\\C]", "invalid escape sequence: `\\C`"),
    ("(?<a-b>x)", "invalid named capture: `(?<a-b>`"),
    ("(?P=n)", "invalid or unsupported Perl syntax: `(?P`"),
    ("(?#c)", "invalid or unsupported Perl syntax: `(?#`"),
    ("(?i-)", "invalid or unsupported Perl syntax: `(?i-)`"),
    ("[z-a]", "invalid character class range: `z-a`"),
    ("\\pX", "invalid character class range: `\\pX`"),
    ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
    ("[a-\\d]", "invalid escape sequence: `\\d`"),
    ("[]", "missing closing ]: `[]`"),
    ("\\x{110000}", "invalid escape sequence: `\\x{110000`"),
    ("\\x{", "invalid escape sequence: `\\x{`"),
    ("a\\", "trailing backslash at end of expression: ``"),
    ("\\8", "invalid escape sequence: `\\8`"),
    (
        "(" * 1000 + "a" + ")" * 1000,
        "expression nests too deeply: `" + "(" * 1000 + "a" + ")" * 1000 + "`",
    ),
    ("(" * 999 + "a" + ")" * 999, None),
    ("\\Q\\C\\E", None),
    ("\\\\C", None),
    ("(?P<n>x)", None),
    ("(?<n>x)", None),
    ("(?P<n>x)(?P<n>y)", None),
    ("(?i)abc", None),
    ("\\p{Greek}", None),
    ("[[:word:]]", None),
    ("x{,3}", None),
    ("a{1000}b{1000}c{1000}d{1000}", None),
    ("((a{10}){10}){10}", None),
    ("\\pL{1000}", None),
    ("\\Qab", None),
    ("[]a]", None),
    ("\\0", None),
]


@pytest.mark.parametrize(("pattern", "error"), KUBE_ERRORS, ids=[p[:20] for p, _ in KUBE_ERRORS])
def test_a_pattern_compiles_or_not_as_in_go(pattern: str, error: str | None) -> None:
    expected = error and f"error parsing regexp: {error}"
    assert patterns.compile_error(pattern) == expected


# kube's answer to an object with the value under a property with the pattern.
KUBE_MATCHES = [
    ("^(a+)+$", "a" * 40 + "!", False),
    ("^(a+)+$", "a" * 40, True),
    ("^abc$", "abc\n", False),  # Go's $ is the end of the text, not of a line
    ("^abc$", "xabcx", False),
    ("b", "abc", True),  # anywhere in the value
    ("b", "xyz", False),
    ("^\\w+$", "héllo", False),  # \w is ASCII
    ("^.$", "é", True),  # a character, not a byte
    ("^.$", "\n", False),
]


@pytest.mark.parametrize(("pattern", "value", "matched"), KUBE_MATCHES)
def test_a_value_matches_as_in_go(pattern: str, value: str, matched: bool) -> None:
    assert patterns.matches(pattern, value) is matched


def test_a_stored_pattern_that_does_not_compile_refuses_every_value() -> None:
    # kube, with "(?=a)" written into a stored CRD: both "a" and "b" refused so.
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"x": {"type": "string", "pattern": "(?=a)"}}}
        },
    }
    obj = {"apiVersion": "example.com/v1", "kind": "Inv", "metadata": {}, "spec": {"x": "a"}}
    detail = (
        "spec.x in body should match '(?=a), but pattern is invalid: "
        "error parsing regexp: invalid or unsupported Perl syntax: `(?=`'"
    )
    got = [(c.reason, c.field, c.message) for c in validate(obj, schema)]
    assert got == [("FieldValueInvalid", "spec.x", f'Invalid value: "a": {detail}')]
