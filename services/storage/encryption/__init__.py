"""Encryption at rest, byte for byte as kube-apiserver does it.

The storage service reads kube's EncryptionConfiguration (apiserver.config.k8s.io/v1)
and turns each value into `k8s:enc:<provider>:v1:<keyname>:<payload>` on the
way into etcd: the first provider of a resource's list writes, every listed
provider reads, and a value read through any but the first is stale (a
rewrite re-encrypts it). Providers: identity, aescbc, aesgcm, secretbox.
"""

from services.storage.encryption._config import (
    ConfigError,
    ResourcePattern,
    Rule,
    load_config,
    parse_config,
)
from services.storage.encryption._providers import (
    AESCBC,
    AESGCM,
    Identity,
    Provider,
    Secretbox,
)
from services.storage.encryption._transformer import Decrypted, Transformers, UnreadableValue

__all__ = [
    "AESCBC",
    "AESGCM",
    "ConfigError",
    "Decrypted",
    "Identity",
    "Provider",
    "ResourcePattern",
    "Rule",
    "Secretbox",
    "Transformers",
    "UnreadableValue",
    "load_config",
    "parse_config",
]
