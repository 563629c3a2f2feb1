"""Name rules from k8s.io/apimachinery validation: DNS-1123 labels and subdomains,
and generateName suffixes, with kube's exact error wording."""

from __future__ import annotations

import re
import secrets

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + r"(\." + _LABEL_FMT + ")*"
_LABEL = re.compile(f"^{_LABEL_FMT}$")
_SUBDOMAIN = re.compile(f"^{_SUBDOMAIN_FMT}$")

LABEL_ERROR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{_LABEL_FMT}')"
)
SUBDOMAIN_ERROR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    f"regex used for validation is '{_SUBDOMAIN_FMT}')"
)


def dns1123_label_errors(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1123_LABEL_MAX:
        errors.append(f"must be no more than {DNS1123_LABEL_MAX} characters")
    if not _LABEL.match(value):
        errors.append(LABEL_ERROR)
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
