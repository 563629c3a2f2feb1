"""Transformers: which providers apply to a key, and the prefix-keyed
dispatch that writes with the first and reads with any."""

from __future__ import annotations

from dataclasses import dataclass

from services.storage.encryption._config import Rule
from services.storage.encryption._providers import DecryptError, Identity, Provider
from strata.storage import resource_of

ENCRYPTED_PREFIX = b"k8s:enc:"


@dataclass(frozen=True)
class Decrypted:
    plaintext: bytes
    # Read through a provider other than the one that writes: a rewrite re-encrypts it.
    stale: bool


class UnreadableValue(Exception):
    """A stored value none of the configured providers can read; says why."""


class Transformers:
    def __init__(self, rules: list[Rule]) -> None:
        self._rules = rules
        self._cache: dict[tuple[str, str], tuple[Provider, ...]] = {}

    def providers(self, key: str) -> tuple[Provider, ...]:
        """The providers for key's resource; identity alone when no rule matches."""
        group, resource = resource_of(key)
        found = self._cache.get((group, resource))
        if found is None:
            found = next(
                (
                    rule.providers
                    for rule in self._rules
                    if any(p.matches(group, resource) for p in rule.patterns)
                ),
                (Identity(),),
            )
            self._cache[(group, resource)] = found
        return found

    def encrypts(self, key: str) -> bool:
        return not isinstance(self.providers(key)[0], Identity)

    def write(self, key: str, etcd_key: bytes, plaintext: bytes) -> bytes:
        return self.providers(key)[0].encrypt(plaintext, etcd_key)

    def read(self, key: str, etcd_key: bytes, stored: bytes) -> Decrypted:
        providers = self.providers(key)
        identity_listed = False
        for index, provider in enumerate(providers):
            if isinstance(provider, Identity):
                identity_listed = True
                continue
            if stored.startswith(provider.prefix):
                try:
                    plaintext = provider.open(stored[len(provider.prefix) :], etcd_key)
                except DecryptError as e:
                    raise UnreadableValue(
                        f"{provider.type} key {provider.key_name!r} cannot decrypt it: {e}"
                    ) from None
                return Decrypted(plaintext, stale=index != 0)
        if stored.startswith(ENCRYPTED_PREFIX):
            named = stored[len(ENCRYPTED_PREFIX) :].split(b":", 3)
            what = (
                f"{named[0].decode(errors='replace')} key {named[2].decode(errors='replace')!r}"
                if len(named) >= 3
                else "an unknown provider"
            )
            raise UnreadableValue(f"it was encrypted with {what}, which is not configured")
        if identity_listed:
            return Decrypted(stored, stale=not isinstance(providers[0], Identity))
        raise UnreadableValue(
            "it is not encrypted and identity is not among the configured providers"
        )
