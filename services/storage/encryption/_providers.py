"""The value transformers of kube's EncryptionConfiguration.

Each provider with a key knows its prefix (`k8s:enc:<type>:v1:<keyname>:`) and
the payload format after it; the nonce source is injectable so golden tests
can pin the exact bytes.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import nacl.exceptions
import nacl.secret
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM as _AESGCM

Random = Callable[[int], bytes]


class DecryptError(Exception):
    """A payload this provider's key cannot open."""


@dataclass(frozen=True)
class Provider(ABC):
    """One provider entry with one key (identity has neither)."""

    type: ClassVar[str]
    key_name: str = ""
    secret: bytes = field(default=b"", repr=False)
    random: Random = field(default=os.urandom, repr=False, compare=False)

    @property
    def prefix(self) -> bytes:
        return f"k8s:enc:{self.type}:v1:{self.key_name}:".encode()

    @abstractmethod
    def seal(self, plaintext: bytes, context: bytes) -> bytes:
        """The payload that follows the prefix; context is the etcd key."""

    @abstractmethod
    def open(self, payload: bytes, context: bytes) -> bytes:
        """The plaintext of a payload, or DecryptError."""

    def encrypt(self, plaintext: bytes, context: bytes) -> bytes:
        return self.prefix + self.seal(plaintext, context)


@dataclass(frozen=True)
class Identity(Provider):
    type: ClassVar[str] = "identity"

    @property
    def prefix(self) -> bytes:
        return b""

    def seal(self, plaintext: bytes, context: bytes) -> bytes:
        return plaintext

    def open(self, payload: bytes, context: bytes) -> bytes:
        return payload


@dataclass(frozen=True)
class AESGCM(Provider):
    """12-byte random nonce, then ciphertext and tag; the etcd key is the associated data."""

    type: ClassVar[str] = "aesgcm"

    def seal(self, plaintext: bytes, context: bytes) -> bytes:
        nonce = self.random(12)
        return nonce + _AESGCM(self.secret).encrypt(nonce, plaintext, context)

    def open(self, payload: bytes, context: bytes) -> bytes:
        if len(payload) < 12 + 16:
            raise DecryptError("the data is too short for aesgcm")
        try:
            return _AESGCM(self.secret).decrypt(payload[:12], payload[12:], context)
        except InvalidTag:
            raise DecryptError("aesgcm authentication failed") from None


@dataclass(frozen=True)
class AESCBC(Provider):
    """16-byte random IV, then the PKCS#7-padded ciphertext."""

    type: ClassVar[str] = "aescbc"

    def seal(self, plaintext: bytes, context: bytes) -> bytes:
        iv = self.random(16)
        padder = padding.PKCS7(128).padder()
        padded = padder.update(plaintext) + padder.finalize()
        encryptor = Cipher(algorithms.AES(self.secret), modes.CBC(iv)).encryptor()
        return iv + encryptor.update(padded) + encryptor.finalize()

    def open(self, payload: bytes, context: bytes) -> bytes:
        if len(payload) < 32 or len(payload) % 16:
            raise DecryptError("the data is not a whole number of aescbc blocks")
        decryptor = Cipher(algorithms.AES(self.secret), modes.CBC(payload[:16])).decryptor()
        padded = decryptor.update(payload[16:]) + decryptor.finalize()
        unpadder = padding.PKCS7(128).unpadder()
        try:
            return unpadder.update(padded) + unpadder.finalize()
        except ValueError:
            raise DecryptError("invalid aescbc padding (wrong key?)") from None


@dataclass(frozen=True)
class Secretbox(Provider):
    """24-byte random nonce, then NaCl secretbox (XSalsa20-Poly1305) output."""

    type: ClassVar[str] = "secretbox"

    def seal(self, plaintext: bytes, context: bytes) -> bytes:
        nonce = self.random(24)
        return bytes(nacl.secret.SecretBox(self.secret).encrypt(plaintext, nonce))

    def open(self, payload: bytes, context: bytes) -> bytes:
        if len(payload) < 24 + 16:
            raise DecryptError("the data is too short for secretbox")
        try:
            return bytes(nacl.secret.SecretBox(self.secret).decrypt(payload[24:], payload[:24]))
        except nacl.exceptions.CryptoError:
            raise DecryptError("secretbox authentication failed") from None


PROVIDER_TYPES: dict[str, type[Provider]] = {
    "identity": Identity,
    "aesgcm": AESGCM,
    "aescbc": AESCBC,
    "secretbox": Secretbox,
}
KEY_SIZES = {"aesgcm": (16, 24, 32), "aescbc": (16, 24, 32), "secretbox": (32,)}
