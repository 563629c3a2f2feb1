"""Encryption at rest: the stored format pinned by golden values, provider
dispatch and staleness, resource matching, and configuration errors."""

from __future__ import annotations

import base64

import pytest

from services.storage.encryption import (
    AESCBC,
    AESGCM,
    ConfigError,
    Identity,
    Secretbox,
    Transformers,
    UnreadableValue,
    parse_config,
)
from tests.support import kube_format

KEY = bytes(range(32))
PLAINTEXT = b'{"kind":"Secret","data":{"password":"aHVudGVyMg=="}}'
CONTEXT = b"/registry/secrets/default/db"


def fixed_nonce(n: int) -> bytes:
    return bytes(range(100, 100 + n))


GOLDEN = {
    AESGCM: b"k8s:enc:aesgcm:v1:k1:"
    + bytes.fromhex(
        "6465666768696a6b6c6d6e6f3339b50f178d74a41c313a8ba8001edf6ee0626bff0dd148dcf3dc2988d0d2"
        "27e68d62fa6e73d35288973f69840fadf22679e59a62da8ff9e0c8b4bfe411e04243abb4ee"
    ),
    AESCBC: b"k8s:enc:aescbc:v1:k1:"
    + bytes.fromhex(
        "6465666768696a6b6c6d6e6f7071727344283a8a80a45cba29966b60a5c5bdabff8c97040af6cd1e2b3884"
        "4d77db9ced4436d59a43552567f3c5e16b10b8903797c1e1a26d8950c829489b730f9ff415"
    ),
    Secretbox: b"k8s:enc:secretbox:v1:k1:"
    + bytes.fromhex(
        "6465666768696a6b6c6d6e6f707172737475767778797a7b02ac447fb4b4e848b1f32eb30ca38c4f799bf2"
        "a054d2ecd392ae46f745e1d73a12885cc690c76921dd2e32f579f8bee7da0bd6226d56d3b280725034795e"
        "ba58fcb2d365"
    ),
}


@pytest.mark.parametrize("provider_type", list(GOLDEN))
def test_golden_ciphertexts_never_change(provider_type: type[AESGCM]) -> None:
    provider = provider_type(key_name="k1", secret=KEY, random=fixed_nonce)
    assert provider.encrypt(PLAINTEXT, CONTEXT) == GOLDEN[provider_type]
    assert provider.open(GOLDEN[provider_type][len(provider.prefix) :], CONTEXT) == PLAINTEXT


@pytest.mark.parametrize("provider_type", list(GOLDEN))
def test_independent_decoder_reads_the_golden_values(provider_type: type[AESGCM]) -> None:
    assert kube_format.decode(GOLDEN[provider_type], {"k1": KEY}, CONTEXT) == PLAINTEXT


def test_aesgcm_binds_the_etcd_key() -> None:
    provider = AESGCM(key_name="k1", secret=KEY)
    sealed = provider.encrypt(PLAINTEXT, CONTEXT)
    transformers = Transformers(parse_config(_config(("aesgcm", "k1", KEY))))
    with pytest.raises(UnreadableValue, match="cannot decrypt"):
        transformers.read("/secrets/default/other", b"/registry/secrets/default/other", sealed)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _config(*providers: tuple[str, str, bytes] | str, resources: str = "secrets") -> str:
    """A configuration for resources with providers given as (type, key name, secret)
    or "identity"."""
    entries = []
    for provider in providers:
        if provider == "identity":
            entries.append("      - identity: {}")
        else:
            assert isinstance(provider, tuple)
            kind, name, secret = provider
            entries.append(
                f"      - {kind}:\n          keys:\n            - name: {name}\n"
                f"              secret: {_b64(secret)}"
            )
    return (
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
        f"  - resources: [{resources}]\n    providers:\n" + "\n".join(entries) + "\n"
    )


def test_first_provider_writes_and_others_read_stale() -> None:
    old, new = bytes(32), bytes(range(32))
    before = Transformers(parse_config(_config(("aescbc", "old", old))))
    written_before = before.write("/secrets/ns/a", b"/registry/secrets/ns/a", PLAINTEXT)
    assert written_before.startswith(b"k8s:enc:aescbc:v1:old:")

    rotated = Transformers(parse_config(_config(("aesgcm", "new", new), ("aescbc", "old", old))))
    read = rotated.read("/secrets/ns/a", b"/registry/secrets/ns/a", written_before)
    assert read.plaintext == PLAINTEXT and read.stale
    rewritten = rotated.write("/secrets/ns/a", b"/registry/secrets/ns/a", read.plaintext)
    assert rewritten.startswith(b"k8s:enc:aesgcm:v1:new:")
    fresh = rotated.read("/secrets/ns/a", b"/registry/secrets/ns/a", rewritten)
    assert fresh.plaintext == PLAINTEXT and not fresh.stale


def test_identity_reads_plain_values_only_when_listed() -> None:
    listed = Transformers(parse_config(_config(("aesgcm", "key1", KEY), "identity")))
    read = listed.read("/secrets/ns/a", b"/registry/secrets/ns/a", PLAINTEXT)
    assert read.plaintext == PLAINTEXT and read.stale
    unlisted = Transformers(parse_config(_config(("aesgcm", "key1", KEY))))
    with pytest.raises(UnreadableValue, match="identity is not among"):
        unlisted.read("/secrets/ns/a", b"/registry/secrets/ns/a", PLAINTEXT)
    identity_first = Transformers(parse_config(_config("identity", ("aesgcm", "key1", KEY))))
    assert not identity_first.read("/secrets/ns/a", b"/x", PLAINTEXT).stale
    assert identity_first.write("/secrets/ns/a", b"/x", PLAINTEXT) == PLAINTEXT


def test_a_value_for_a_missing_key_names_that_key() -> None:
    sealed = AESGCM(key_name="gone", secret=KEY).encrypt(PLAINTEXT, CONTEXT)
    transformers = Transformers(parse_config(_config(("aesgcm", "key1", KEY), "identity")))
    with pytest.raises(UnreadableValue, match="aesgcm key 'gone'"):
        transformers.read("/secrets/default/db", CONTEXT, sealed)


def test_a_wrong_secret_is_an_error_not_garbage() -> None:
    sealed = AESCBC(key_name="key1", secret=bytes(32)).encrypt(PLAINTEXT, CONTEXT)
    transformers = Transformers(parse_config(_config(("aescbc", "key1", KEY))))
    with pytest.raises(UnreadableValue, match="aescbc key 'key1' cannot decrypt"):
        for _ in range(20):  # a wrong key may by chance unpad once; never 20 times
            transformers.read("/secrets/default/db", CONTEXT, sealed)
            sealed = AESCBC(key_name="key1", secret=bytes(32)).encrypt(PLAINTEXT, CONTEXT)


@pytest.mark.parametrize(
    ("resources", "key", "encrypted"),
    [
        ("secrets", "/secrets/ns/a", True),
        ("secrets", "/configmaps/ns/a", False),
        ("'*.'", "/configmaps/ns/a", True),
        ("'*.'", "/example.com/widgets/ns/a", False),
        ("'*.*'", "/example.com/widgets/ns/a", True),
        ("widgets.example.com", "/example.com/widgets/ns/a", True),
        ("widgets.example.com", "/example.com/gadgets/ns/a", False),
        ("'*.example.com'", "/example.com/gadgets/ns/a", True),
    ],
)
def test_resource_patterns(resources: str, key: str, encrypted: bool) -> None:
    transformers = Transformers(parse_config(_config(("aesgcm", "key1", KEY), resources=resources)))
    assert transformers.encrypts(key) is encrypted
    assert isinstance(transformers.providers(key)[0], Identity) is not encrypted


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("apiVersion: v1\nkind: EncryptionConfiguration\nresources: []\n", 1, "apiVersion is 'v1'"),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
            "  - resources: [secrets]\n    providers:\n      - aesgcm:\n          keys:\n"
            "            - name: k\n              secret: c2hvcnQ=\n",
            9,
            "is 5 bytes; it must be 16 or 24 or 32",
        ),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
            "  - resources: [Secrets]\n    providers:\n      - identity: {}\n",
            4,
            "must be lowercase",
        ),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
            "  - resources: [secrets]\n    providers:\n      - aescbc:\n          keys:\n"
            "            - name: k\n              secret: '%%%'\n",
            9,
            "is not base64",
        ),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
            "  - resources: [secrets]\n    providers:\n      - rot13: {}\n",
            6,
            "unknown provider 'rot13'",
        ),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
            "  - resources: [secrets]\n    providers:\n      - identity: {}\n        aesgcm: {}\n",
            6,
            "exactly one provider",
        ),
        (
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"
            "  - resources: [secrets]\n",
            4,
            "needs 'providers'",
        ),
        ("kind: [unclosed\n", 2, "not valid YAML"),
    ],
)
def test_malformed_configuration_names_the_line(text: str, line: int, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(text, "enc.yaml")
    assert str(raised.value).startswith(f"enc.yaml:{line}: "), str(raised.value)
    assert message in str(raised.value)
