"""An independent decoder for kube's encrypted-at-rest values, written from the
format alone (prefix `k8s:enc:<provider>:v1:<key>:`, then aesgcm: 12-byte nonce
+ ciphertext+tag with the etcd key as associated data; aescbc: 16-byte IV +
PKCS#7 ciphertext; secretbox: 24-byte nonce + box). It shares no code with
services.storage.encryption, so the two checking each other means something."""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from nacl.bindings import crypto_secretbox_open


def decode(stored: bytes, keys: dict[str, bytes], etcd_key: bytes) -> bytes:
    head, _, rest = stored.partition(b":v1:")
    if not head.startswith(b"k8s:enc:"):
        raise ValueError("not an encrypted value")
    provider = head[len(b"k8s:enc:") :].decode()
    key_name, _, payload = rest.partition(b":")
    secret = keys[key_name.decode()]
    if provider == "aesgcm":
        return AESGCM(secret).decrypt(payload[:12], payload[12:], etcd_key)
    if provider == "aescbc":
        decryptor = Cipher(algorithms.AES(secret), modes.CBC(payload[:16])).decryptor()
        padded = decryptor.update(payload[16:]) + decryptor.finalize()
        return padded[: -padded[-1]]
    if provider == "secretbox":
        return crypto_secretbox_open(payload[24:], payload[:24], secret)
    raise ValueError(f"unknown provider {provider}")
