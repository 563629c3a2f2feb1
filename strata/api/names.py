"""Name rules from k8s.io/apimachinery validation: DNS-1123 labels and subdomains,
qualified names (label and annotation keys), label values, and generateName
suffixes, with kube's exact error wording."""

from __future__ import annotations

import re
import secrets

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_LABEL = re.compile(f"^{_LABEL_FMT}$")
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035 = re.compile(f"^{_DNS1035_FMT}$")
_SUBDOMAIN = re.compile(f"^{_SUBDOMAIN_FMT}$")

QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = f"({_QUALIFIED_FMT})?"
_QUALIFIED = re.compile(f"^{_QUALIFIED_FMT}$")
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_QUALIFIED_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError wording."""
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


LABEL_ERROR = _regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    _LABEL_FMT,
    "my-name",
    "123-abc",
)
DNS1035_LABEL_ERROR = _regex_error(
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character",
    _DNS1035_FMT,
    "my-name",
    "abc-123",
)
SUBDOMAIN_ERROR = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character",
    _SUBDOMAIN_FMT,
    "example.com",
)
QUALIFIED_NAME_ERROR = _regex_error(
    _QUALIFIED_MESSAGE, _QUALIFIED_FMT, "MyName", "my.name", "123-abc"
)
LABEL_VALUE_ERROR = _regex_error(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character",
    _LABEL_VALUE_FMT,
    "MyValue",
    "my_value",
    "12345",
)


def qualified_name_errors(value: str) -> list[str]:
    """IsQualifiedName: an optional DNS subdomain prefix and '/', then a name part."""
    errors = []
    parts = value.split("/")
    if len(parts) > 2:
        return [
            f"a qualified name {QUALIFIED_NAME_ERROR} with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {e}" for e in dns1123_subdomain_errors(prefix))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        errors.append(f"name part must be no more than {QUALIFIED_NAME_MAX} characters")
    if not _QUALIFIED.match(name):
        errors.append(f"name part {QUALIFIED_NAME_ERROR}")
    return errors


def label_value_errors(value: str) -> list[str]:
    """IsValidLabelValue."""
    errors = []
    if len(value) > LABEL_VALUE_MAX:
        errors.append(f"must be no more than {LABEL_VALUE_MAX} characters")
    if not _LABEL_VALUE.match(value):
        errors.append(LABEL_VALUE_ERROR)
    return errors


def dns1123_label_errors(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_LABEL_MAX:
        errors.append(f"must be no more than {DNS1123_LABEL_MAX} characters")
    if not _LABEL.match(value):
        errors.append(LABEL_ERROR)
    return errors


def dns1035_label_errors(value: str) -> list[str]:
    """IsDNS1035Label (Service names)."""
    errors = []
    if len(value) > DNS1123_LABEL_MAX:
        errors.append(f"must be no more than {DNS1123_LABEL_MAX} characters")
    if not _DNS1035.match(value):
        errors.append(DNS1035_LABEL_ERROR)
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errors.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _SUBDOMAIN.match(value):
        errors.append(SUBDOMAIN_ERROR)
    return errors


# apiserver's names.SimpleNameGenerator: 5 random characters from an alphabet
# without vowels or look-alikes, the prefix cut so the whole fits 63 characters.
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_RANDOM_LENGTH = 5
_MAX_GENERATED_NAME = 63


def generate_name(base: str) -> str:
    if len(base) > _MAX_GENERATED_NAME - _RANDOM_LENGTH:
        base = base[: _MAX_GENERATED_NAME - _RANDOM_LENGTH]
    return base + "".join(secrets.choice(_ALPHABET) for _ in range(_RANDOM_LENGTH))


def path_segment_errors(name: str) -> list[str]:
    """path.IsValidPathSegmentName (ValidateRBACName, and kube's generic check of
    every name): any name a URL path can carry."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]
