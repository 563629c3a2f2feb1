"""Encryption at rest as the store applies it: each value sealed on its way
into etcd and opened on its way out through the configured transformers, with
the transformation metrics kube-apiserver keeps. Without a configuration values
pass as they are."""

from __future__ import annotations

from services.storage import metrics
from services.storage.encryption import Transformers, UnreadableValue
from strata.storage import CorruptObject


def _prefix_label(stored: bytes) -> str:
    """The transformer prefix a stored value names ("k8s:enc:aesgcm:v1:key1"), or identity."""
    if not stored.startswith(b"k8s:enc:"):
        return "identity"
    return b":".join(stored.split(b":", 5)[:5]).decode(errors="replace")


class Sealing:
    def __init__(self, transformers: Transformers | None) -> None:
        self._transformers = transformers

    def sealed(self, key: str, ekey: bytes, data: bytes) -> bytes:
        """data as etcd stores it: encrypted when the resource is configured so."""
        if self._transformers is None:
            return data
        writer = self._transformers.providers(key)[0]
        with metrics.transformation("to_storage", writer.prefix.decode().rstrip(":") or "identity"):
            return self._transformers.write(key, ekey, data)

    def opened(self, key: str, ekey: bytes, stored: bytes) -> tuple[bytes, bool]:
        """The plaintext of a stored value, and whether a provider that does not
        write read it (stale: a rotated key's)."""
        if self._transformers is None:
            return stored, False
        try:
            with metrics.transformation("from_storage", _prefix_label(stored)):
                decrypted = self._transformers.read(key, ekey, stored)
                return decrypted.plaintext, decrypted.stale
        except UnreadableValue as e:
            raise CorruptObject(key, f"cannot read the stored value at {key}: {e}") from None
