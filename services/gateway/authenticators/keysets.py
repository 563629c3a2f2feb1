"""A JWT issuer's signing keys, fetched as kube's JWT authenticator fetches
them: the issuer's discovery document (its discoveryURL, else
<url>/.well-known/openid-configuration) over HTTPS, trusting the configured
certificate authority (else the system's), then the JWKS its jwks_uri names.

Everything here is asynchronous, so the event loop never waits on an issuer:
the first fetch is tried in the background until it succeeds (tokens of the
issuer are refused as not initialized until then), the keys are fetched again
every REFRESH_SECONDS, and a token naming a key id the set does not hold
brings a fetch at most every MIN_REFETCH_SECONDS (an issuer that rotated its
keys), which that token waits for.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from typing import Any

import aiohttp
import jwt

from strata import telemetry

REFRESH_SECONDS = 600.0
MIN_REFETCH_SECONDS = 10.0
FIRST_RETRY_SECONDS = 0.5
MAX_RETRY_SECONDS = 30.0
FETCH_TIMEOUT_SECONDS = 10.0
WELL_KNOWN = "/.well-known/openid-configuration"

log = telemetry.get_logger("strata.gateway.keysets")


class FetchError(Exception):
    pass


class KeySet:
    def __init__(self, url: str, discovery_url: str = "", certificate_authority: str = "") -> None:
        self.url = url
        self._discovery = discovery_url or url.rstrip("/") + WELL_KNOWN
        self._ca = certificate_authority
        self._by_kid: dict[str, list[jwt.PyJWK]] = {}
        self.keys: list[jwt.PyJWK] = []
        self.initialized = False
        self._fetched = float("-inf")
        self._fetching: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None

    def _tls(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if self._ca:
            context = ssl.create_default_context(cadata=self._ca)
        return context

    async def _json(self, session: aiohttp.ClientSession, url: str) -> Any:
        async with session.get(url) as response:
            if response.status != 200:
                raise FetchError(f"{url}: {response.status} {response.reason}")
            return await response.json(content_type=None)

    async def fetch(self) -> None:
        """Fetch the discovery document and the keys it names, now."""
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._tls()),
                timeout=aiohttp.ClientTimeout(total=FETCH_TIMEOUT_SECONDS),
            )
        self._fetched = time.monotonic()
        try:
            document = await self._json(self._session, self._discovery)
            if not isinstance(document, dict) or document.get("issuer") != self.url:
                found = document.get("issuer") if isinstance(document, dict) else None
                raise FetchError(
                    "oidc: issuer did not match the issuer returned by provider, expected "
                    f'"{self.url}" got "{found}"'
                )
            jwks = await self._json(self._session, str(document.get("jwks_uri") or ""))
            keys = jwt.PyJWKSet.from_dict(jwks).keys
        except (aiohttp.ClientError, TimeoutError, ValueError, jwt.PyJWKSetError) as e:
            raise FetchError(f"{self._discovery}: {e}") from e
        by_kid: dict[str, list[jwt.PyJWK]] = {}
        for key in keys:
            by_kid.setdefault(str(key.key_id or ""), []).append(key)
        self.keys, self._by_kid, self.initialized = keys, by_kid, True

    def keys_for(self, kid: str) -> list[jwt.PyJWK]:
        return self._by_kid.get(kid, []) if kid else self.keys

    async def refetch_for(self, kid: str) -> list[jwt.PyJWK]:
        """The keys of kid, fetched again first when the set has none of it and
        was not fetched a moment ago (several tokens wait for one fetch)."""
        if kid in self._by_kid or time.monotonic() - self._fetched < MIN_REFETCH_SECONDS:
            return self.keys_for(kid)
        if self._fetching is None or self._fetching.done():
            self._fetching = asyncio.create_task(self.fetch())
        with contextlib.suppress(FetchError):
            await asyncio.shield(self._fetching)
        return self.keys_for(kid)

    async def run(self) -> None:
        """Fetch until the first success, then keep the keys fresh, for ever."""
        delay = FIRST_RETRY_SECONDS
        try:
            while True:
                try:
                    await self.fetch()
                except FetchError as e:
                    log.warning("cannot fetch the issuer's keys", issuer=self.url, error=str(e))
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, MAX_RETRY_SECONDS)
                    continue
                delay = FIRST_RETRY_SECONDS
                await asyncio.sleep(REFRESH_SECONDS)
        finally:
            if self._session is not None:
                await self._session.close()
                self._session = None
