"""kube's selector grammar, checked against what a real kube-apiserver v1.36.2
answered for each selector (recorded with raw list requests through
../shared/kube/with_kube.sh; "" is a 200, anything else the 400's message),
and Go's base64 as kube decodes a Secret's data, and kube's Status details
order."""

from __future__ import annotations

import base64

import orjson
import pytest

from services.registry.builtin.resources import BUILT_IN
from services.registry.generic import bodies
from services.registry.generic.declarations import Resource
from strata.api import base64data, errors, gojson
from strata.api.errors import StatusError
from strata.api.selectors import parse_field_selector, parse_label_selector
from strata.storage import InvalidRequest, continuation

FIELDS = frozenset({"metadata.name", "metadata.namespace"})
# kube's words for a bad label key's name part and a bad label value.
NAME_RULE = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)

KUBE_LABEL_SELECTORS = [
    ("a=b,", "found '', expected: identifier after ','"),
    (",a=b", "found ',', expected: !, identifier, or 'end of string'"),
    ("a=b,,c=d", "found ',', expected: identifier after ','"),
    (" a = b ", ""),
    ("a=b, c=d", ""),
    (",", "found ',', expected: !, identifier, or 'end of string'"),
    (",,", "found ',', expected: !, identifier, or 'end of string'"),
    (" ", ""),
    ("", ""),
    ("a in (b,),", "found '', expected: identifier after ','"),
    ("a in (b, x)", ""),
    ("a in (b,)", ""),
    ("a in (,b)", ""),
    ("a=b ,", "found '', expected: identifier after ','"),
    ("a=b, ,c=d", "found ',', expected: identifier after ','"),
    ("a==b", ""),
    ("a!=x", ""),
    ("!x", ""),
    ("! x", ""),
    ("a", ""),
    ("a b", ("unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt")),
    ("a=b c", "found 'c', expected: ',' or 'end of string'"),
    ("a in(b)", ""),
    ("a notin (x)", ""),
    ("a>1", ""),
    ("a=", ""),
    ("=b", "found '=', expected: !, identifier, or 'end of string'"),
    ("a=b,!", "unable to parse requirement: found '', expected: identifier"),
    ("a=(b)", "unable to parse requirement: found '(', expected: identifier"),
    ("x in ()", ""),
    ("a in ( b , x )", ""),
    ("a_=b", 'unable to parse requirement: <nil>: Invalid value: "a_": <NAME_RULE>'),
    ("a=b_", ('unable to parse requirement: values[0][a]: Invalid value: "b_": <VALUE_RULE>')),
    (
        "a>x",
        (
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', "
            "'Lt' operators, the value must be an integer"
        ),
    ),
    (
        "a>x_",
        (
            "unable to parse requirement: [values[0]: Invalid value: \"x_\": for 'Gt'"
            ", 'Lt' operators, the value must be an integer, values[0][a]: Invalid "
            'value: "x_": <VALUE_RULE>]'
        ),
    ),
    (
        "a>1.5",
        (
            "unable to parse requirement: values[0]: Invalid value: \"1.5\": for 'Gt'"
            ", 'Lt' operators, the value must be an integer"
        ),
    ),
    ("a>+1", ('unable to parse requirement: values[0][a]: Invalid value: "+1": <VALUE_RULE>')),
    ("a in (b_)", ('unable to parse requirement: values[0][a]: Invalid value: "b_": <VALUE_RULE>')),
    ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),
    ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("a in (b,,c)", ""),
    ("a in (!)", ("unable to parse requirement: found '!', expected: ',', ')' or identifier")),
    ("-a=b", 'unable to parse requirement: <nil>: Invalid value: "-a": <NAME_RULE>'),
    ("a/b=c", ""),
    (
        "a/=c",
        (
            'unable to parse requirement: <nil>: Invalid value: "a/": name part mus'
            "t be non-empty; <NAME_RULE>"
        ),
    ),
    ("a=b=c", "found '=', expected: ',' or 'end of string'"),
    ("a!", ("unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt")),
    ("a!b", ("unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt")),
    ("a<>b", "unable to parse requirement: found '>', expected: identifier"),
    ("a=!b", "unable to parse requirement: found '!', expected: identifier"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("a=b,a=c", ""),
    ("a notin ()", ""),
    ("a in ()", ""),
    ("\ta=b\n", ""),
    ("a=b\t,c=d", ""),
    ("a =", ""),
    ("(a)", "found '(', expected: !, identifier, or 'end of string'"),
    ("a in (b,c d)", "unable to parse requirement: found 'd', expected: ',' or ')'"),
    ("a>01", ""),
    ("a>-1", ('unable to parse requirement: values[0][a]: Invalid value: "-1": <VALUE_RULE>')),
    ("a in (b))", "found ')', expected: ',' or 'end of string'"),
    ("a=b)", "found ')', expected: ',' or 'end of string'"),
    ("a==", ""),
    ("x in (,)", ""),
    ("a=b,c", ""),
    ("notin=b", ""),
    ("in", ""),
    ("a in (in)", ""),
    ("a=in", ""),
    ("!in", ""),
]
KUBE_FIELD_SELECTORS = [
    ("metadata.name=sel-a,", ""),
    (",metadata.name=sel-a", ""),
    ("metadata.name=sel-a,,metadata.namespace=default", ""),
    (
        " metadata.name = sel-a ",
        (
            '" metadata.name " is not a known field selector: only "metadata.name",'
            ' "metadata.namespace"'
        ),
    ),
    (
        "metadata.name=sel-a, metadata.namespace=default",
        (
            '" metadata.namespace" is not a known field selector: only "metadata.na'
            'me", "metadata.namespace"'
        ),
    ),
    (",", ""),
    (",,", ""),
    (" ", "invalid selector: ' '; can't understand ' '"),
    ("", ""),
    ("metadata.name==sel-a", ""),
    ("metadata.name!=sel-a", ""),
    ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
    ("metadata.name=sel-a,x", "invalid selector: 'metadata.name=sel-a,x'; can't understand 'x'"),
    ("=sel-a", ('"" is not a known field selector: only "metadata.name", "metadata.namespace"')),
    ("metadata.name=", ""),
    (
        "metadata.name=sel-a,metadata.name",
        ("invalid selector: 'metadata.name=sel-a,metadata.name'; can't understand 'metadata.name'"),
    ),
    ("metadata.name=a b", ""),
    (
        "metadata.nam=x",
        (
            '"metadata.nam" is not a known field selector: only "metadata.name", "m'
            'etadata.namespace"'
        ),
    ),
    ("metadata.name=sel\\,a", ""),
    (
        "metadata.name=sel-a, ,metadata.namespace=default",
        (
            "invalid selector: 'metadata.name=sel-a, ,metadata.namespace=default'; "
            "can't understand ' '"
        ),
    ),
    ("metadata.name=sel-a ,", ""),
]


def _expanded(message: str) -> str:
    """A recorded message with kube's long name and label value rules put back."""
    return message.replace("<NAME_RULE>", NAME_RULE).replace("<VALUE_RULE>", VALUE_RULE)


@pytest.mark.parametrize(("text", "message"), KUBE_LABEL_SELECTORS)
def test_label_selectors_parse_as_kube_does(text: str, message: str) -> None:
    if not message:
        parse_label_selector(text)
        return
    with pytest.raises(StatusError) as raised:
        parse_label_selector(text)
    assert (raised.value.code, raised.value.message) == (400, _expanded(message))


@pytest.mark.parametrize(("text", "message"), KUBE_FIELD_SELECTORS)
def test_field_selectors_parse_as_kube_does(text: str, message: str) -> None:
    if not message:
        parse_field_selector(text, FIELDS)
        return
    with pytest.raises(StatusError) as raised:
        parse_field_selector(text, FIELDS)
    assert (raised.value.code, raised.value.message) == (400, _expanded(message))


def test_field_selectors_skip_empty_terms_and_keep_spaces() -> None:
    selector = parse_field_selector(",metadata.name=a,,metadata.namespace!=b ,", FIELDS)
    assert selector.matches({"metadata.name": "a", "metadata.namespace": "c"})
    assert selector.matches({"metadata.name": "a", "metadata.namespace": "b"})  # "b " is not "b"
    assert parse_field_selector("metadata.name=a\\,b", FIELDS).exact("metadata.name") == "a,b"


def test_kinds_that_convert_field_labels_refuse_in_their_own_words() -> None:
    # kube's secrets, namespaces, events and services (recorded: bogus=x).
    with pytest.raises(StatusError) as raised:
        parse_field_selector("bogus=x", FIELDS, field_label_conversion=True)
    assert raised.value.message == "field label not supported: bogus"


def test_label_selectors_match_as_kube_does() -> None:
    selector = parse_label_selector("x in (,), a>01, !b, c notin (d)")
    assert str(selector) == "a>01,!b,c notin (d),x in ()"  # sorted by key, as kube's
    assert selector.matches({"a": "2", "x": ""})
    assert not selector.matches({"a": "1", "x": ""})
    assert not selector.matches({"a": "1_0", "x": ""})  # Go's ParseInt takes no underscores
    assert not selector.matches({"a": "2", "x": "", "b": ""})
    assert not selector.matches({"a": "2", "x": "", "c": "d"})


# (data value, what kube stores and serves, or the offset of its refusal);
# recorded by creating Secrets with each.
_VALUE = "aGVsbG8gd29ybGQsIHRoaXMgaXMgYSBsb25nIGVub3VnaCB2YWx1ZSB0byB3cmFwIGxpbmVzIQ=="
KUBE_BASE64: list[tuple[str, str | int]] = [
    (_VALUE[:20] + "\n" + _VALUE[20:], _VALUE),
    (_VALUE[:20] + "\r\n" + _VALUE[20:], _VALUE),
    (_VALUE[:20] + "\r" + _VALUE[20:], _VALUE),
    (_VALUE + "\n", _VALUE),
    ("\n" + _VALUE, _VALUE),
    ("aGk=\n", "aGk="),
    ("aQ=\n=", "aQ=="),
    ("", ""),
    ("\n", ""),
    ("aR==", "aQ=="),
    (_VALUE[:20] + " " + _VALUE[20:], 20),
    (_VALUE[:20] + "\t" + _VALUE[20:], 20),
    ("aGk", 0),
    ("aQ", 0),
    ("aGk==", 4),
    ("aQ==aGk=", 4),
    ("ab$d", 2),
    ("a-_b", 1),
    ("\n\nab$d", 4),
    ("a", 0),
    ("aGk=\naGk=", 5),  # a ConfigMap's binaryData
    ("aGk= ", 4),
    ("aG k=", 2),
]


@pytest.mark.parametrize(("value", "kube"), KUBE_BASE64)
def test_base64_decodes_as_go_does(value: str, kube: str | int) -> None:
    if isinstance(kube, str):
        assert base64data.normalized(value) == kube
        return
    with pytest.raises(base64data.IllegalBase64) as raised:
        base64data.decode(value)
    assert str(raised.value) == f"illegal base64 data at input byte {kube}"


def test_status_details_in_kubes_order() -> None:
    """StatusDetails' JSON: name, group, kind, uid, causes, retryAfterSeconds,
    the empty ones left out; no details at all where kube's has none."""
    found = errors.not_found("deployments", "web", "apps").to_json()
    assert found.endswith(
        b'"details":{"name":"web","group":"apps","kind":"deployments"},"code":404}'
    )
    cause = errors.Cause(reason="FieldValueNotSupported", message="m", field="dryRun")
    options = errors.invalid("CreateOptions", "", [cause], "meta.k8s.io").to_json()
    assert b'"details":{"group":"meta.k8s.io","kind":"CreateOptions","causes":[' in options
    assert b'"details"' not in errors.bad_request("no").to_json()
    assert b'"details"' not in errors.gone("too old").to_json()
    assert b'"details":{}' in errors.path_not_found().to_json()
    again = StatusError.from_json(errors.bad_request("no").to_json())
    assert again.to_json() == errors.bad_request("no").to_json()
    success = errors.success("configmaps", "c", "u-1")
    assert list(success["details"]) == ["name", "kind", "uid"]


# (JSON text, what Go's json.Unmarshal says of it: None when it is valid)
GO_JSON: list[tuple[bytes, str | None]] = [
    (b"hello", "invalid character 'h' looking for beginning of value"),
    (b'{"a":1', gojson.END_OF_INPUT),
    (b"", gojson.END_OF_INPUT),
    (b'{"a":1} x', "invalid character 'x' after top-level value"),
    (b'{"a" 1}', "invalid character '1' after object key"),
    (b'{"a":1 2}', "invalid character '2' after object key:value pair"),
    (b'{"a":1,}', "invalid character '}' looking for beginning of object key string"),
    (b"[1,]", "invalid character ']' looking for beginning of value"),
    (b"[1 2]", "invalid character '2' after array element"),
    (b"tru", "invalid character ' ' in literal true (expecting 'e')"),
    (b"nul!", "invalid character '!' in literal null (expecting 'l')"),
    (b"1.", "invalid character ' ' after decimal point in numeric literal"),
    (b"1e+", "invalid character ' ' in exponent of numeric literal"),
    (b"-x", "invalid character 'x' in numeric literal"),
    (b'"a\x01"', "invalid character '\\x01' in string literal"),
    (b'"\\x"', "invalid character 'x' in string escape code"),
    (b'"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"),
    (b"'a'", "invalid character '\\'' looking for beginning of value"),
    (b"01", "invalid character '1' after top-level value"),
    (b" [ ] ", None),
    (b"null", None),
    (b'{"a":[1,-2.5e+3,true,null,"\\u00e9"]}', None),
]


@pytest.mark.parametrize(("text", "go"), GO_JSON)
def test_json_errors_are_gos(text: bytes, go: str | None) -> None:
    assert gojson.syntax_error(text) == go


def _token(body: object) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(body)).decode().rstrip("=")


V1 = "meta.k8s.io/v1"
# (continue token, kube's answer: (rv, start after the prefix) or its message's end)
CONTINUE_TOKENS: list[tuple[str, tuple[int, str] | str]] = [
    (_token({"v": V1, "rv": 211, "start": "/ct0\x00"}), (211, "ct0\x00")),
    (_token({"v": V1, "rv": 211, "start": "ct0\x00"}), (211, "ct0\x00")),
    (_token({"v": V1, "rv": -7, "start": "ns/a"}), (-1, "ns/a")),
    (_token({"V": V1, "RV": 5, "Start": "a"}), (5, "a")),  # Go matches keys in any case
    ("abc", "invalid character 'i' looking for beginning of value"),
    ("!!!", "illegal base64 data at input byte 0"),
    ("aGVsbG8=", "illegal base64 data at input byte 7"),
    ("abcd\ne", "illegal base64 data at input byte 5"),
    (_token({"v": "x", "rv": 1, "start": "a"}), "server does not recognize this encoded version x"),
    (_token(None), "server does not recognize this encoded version "),
    (_token([1]), "json: cannot unmarshal array into Go value of type storage.continueToken"),
    (
        _token({"v": V1, "rv": 0, "start": "a"}),
        f"incorrect encoded start resourceVersion (version {V1})",
    ),
    (_token({"v": V1, "rv": 1}), f"encoded start key empty (version {V1})"),
    (_token({"v": V1, "rv": 1, "start": "../x"}), "../x"),
    (_token({"v": V1, "rv": 1, "start": "a//b"}), "a//b"),
    (_token({"v": V1, "rv": 1, "start": "a/"}), "a/"),
    (
        _token({"v": V1, "rv": "5", "start": "a"}),
        "json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
    ),
    (
        _token({"v": 1, "rv": 5, "start": "a"}),
        "json: cannot unmarshal number into Go struct field continueToken.v of type string",
    ),
]


@pytest.mark.parametrize(("token", "kube"), CONTINUE_TOKENS)
def test_continue_tokens_as_kube_reads_them(token: str, kube: tuple[int, str] | str) -> None:
    if isinstance(kube, tuple):
        assert continuation.decode("/registry/configmaps/", token) == kube
        return
    with pytest.raises(InvalidRequest) as raised:
        continuation.decode("/registry/configmaps/", token)
    assert raised.value.message == f"invalid continue token: continue key is not valid: {kube}"


def test_continue_tokens_are_kubes_bytes() -> None:
    """kube's token for a page that ended at ct0, at revision 211."""
    expected = "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MjExLCJzdGFydCI6Ii9jdDBcdTAwMDAifQ"
    assert continuation.encode(211, "ct0\x00") == expected


def test_too_large_resource_version_is_kubes_timeout() -> None:
    error = errors.too_large_resource_version("Too large resource version: 9, current: 3")
    assert error.to_json() == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":'
        b'"Timeout: Too large resource version: 9, current: 3","reason":"Timeout","details":'
        b'{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}]'
        b',"retryAfterSeconds":1},"code":504}'
    )
    # Carried to the gateway as JSON, it keeps its Retry-After.
    assert StatusError.from_json(error.to_json()).retry_after_seconds == 1


def test_gos_scanner_reads_only_small_refused_bodies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Go's exact syntax error costs a Python pass over every byte: a body that
    parses never pays it, and a large refused one gets orjson's words instead."""
    configmaps = next(r for r in BUILT_IN if r.name == "configmaps")
    small = b'{"kind": "ConfigMap", "data": {'
    assert "unexpected end of JSON input" in _refused(small, configmaps)

    def scanned(_data: bytes) -> str | None:
        raise AssertionError("Go's scanner ran")

    monkeypatch.setattr(gojson, "syntax_error", scanned)
    valid = orjson.dumps({"metadata": {"name": "a"}, "data": {"k": "v" * 100_000}})
    assert bodies.decode_body(valid, configmaps)["data"]["k"] == "v" * 100_000
    message = _refused(valid[:-1], configmaps)
    assert message.startswith(
        "the object provided is unrecognized (must be of type ConfigMap): "
        "couldn't get version/kind; json parse error: "
    )


def _refused(body: bytes, resource: Resource) -> str:
    with pytest.raises(StatusError) as refused:
        bodies.decode_body(body, resource)
    assert refused.value.code == 400
    return refused.value.message
