"""The asyncio REST client every other part of strata.client talks through:
one aiohttp session per configuration (TLS from the kubeconfig's CA and client
certificate, or none checked when it says so), the user's credentials on every
request (a bearer token, a token file re-read as it rotates, basic auth, or an
exec credential plugin's token or certificate, refreshed when it expires or the
server answers 401), refusals restored as typed ApiErrors, and retries only
where they are safe: 429 (the server did no work) after its Retry-After, and
reads after a broken connection or a 503/504 asking to retry, with exponential
backoff and jitter. `Warning` headers go to a handler (logged by default).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import random
import re
import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import aiohttp
import orjson

from strata.client._config import Config, ConfigError, ExecConfig, write_temp
from strata.client._errors import ApiError, TooManyRequests, Unauthorized, api_error

log = logging.getLogger("strata.client")
WarningHandler = Callable[[list[str]], None]
Params = Mapping[str, str | int | bool | None]
# Bodies, as dicts (sent as JSON) or bytes (sent as they are).
Body = Mapping[str, Any] | list[Any] | bytes | None
# client-go's limits: at most this many retries, each waiting at most this long.
MAX_RETRIES = 10
MAX_BACKOFF_SECONDS = 30.0
_WARNING = re.compile(r'^\d{3} \S+ "((?:[^"\\]|\\.)*)"')
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


def log_warnings(warnings: list[str]) -> None:
    for text in warnings:
        log.warning("the server warns: %s", text)


def parse_warnings(values: list[str]) -> list[str]:
    """The texts of `Warning: 299 - "text"` headers (Go-quoted)."""
    texts = []
    for value in values:
        match = _WARNING.match(value)
        if match:
            texts.append(json.loads(f'"{match.group(1)}"'))
    return texts


def backoff(attempt: int, base: float = 0.1, cap: float = MAX_BACKOFF_SECONDS) -> float:
    """Seconds before retry attempt (0-based): exponential, capped, with full jitter."""
    return float(random.uniform(0, min(cap, base * 2**attempt)))


@dataclass
class _Credential:
    """What an exec plugin returned, until it expires."""

    token: str = ""
    cert: bytes | None = None
    key: bytes | None = None
    expires: float | None = None  # time.time()

    def fresh(self) -> bool:
        return self.expires is None or time.time() < self.expires - 10


def _ssl_context(config: Config, cert: bytes | None, key: bytes | None) -> ssl.SSLContext | bool:
    if not config.server.startswith("https://"):
        return False
    context = ssl.create_default_context(cadata=config.ca_data.decode() if config.ca_data else None)
    if config.insecure_skip_tls_verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert and key:
        cert_file, key_file = write_temp(cert), write_temp(key)
        try:
            context.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as e:
            raise ConfigError(f"the client certificate or key cannot be used: {e}") from None
        finally:
            os.unlink(cert_file)
            os.unlink(key_file)
    return context


def _rfc3339(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


async def run_exec_plugin(spec: ExecConfig, server: str, ca: bytes | None) -> _Credential:
    """Run a client-go credential plugin and read its ExecCredential."""
    info: dict[str, Any] = {
        "apiVersion": spec.api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    if spec.provide_cluster_info:
        cluster: dict[str, Any] = {"server": server}
        if ca:
            cluster["certificate-authority-data"] = base64.b64encode(ca).decode()
        info["spec"]["cluster"] = cluster
    command = spec.command
    if os.sep in command and not os.path.isabs(command):
        command = str(spec.base_dir / command)
    env = {**os.environ, **dict(spec.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
    try:
        process = await asyncio.create_subprocess_exec(
            command,
            *spec.args,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as e:
        raise ConfigError(f"exec plugin {spec.command}: {e.strerror}") from None
    out, err = await process.communicate()
    if process.returncode != 0:
        raise ConfigError(
            f"exec plugin {spec.command} exited {process.returncode}: "
            f"{err.decode(errors='replace').strip()}"
        )
    try:
        status = json.loads(out)["status"]
    except (ValueError, KeyError, TypeError):
        raise ConfigError(f"exec plugin {spec.command} did not print an ExecCredential") from None
    expires = status.get("expirationTimestamp")
    credential = _Credential(
        token=str(status.get("token") or ""),
        cert=str(status["clientCertificateData"]).encode()
        if status.get("clientCertificateData")
        else None,
        key=str(status["clientKeyData"]).encode() if status.get("clientKeyData") else None,
        expires=_rfc3339(str(expires)) if expires else None,
    )
    if not credential.token and not (credential.cert and credential.key):
        raise ConfigError(f"exec plugin {spec.command} gave neither a token nor a certificate")
    return credential


class RestClient:
    """Requests to one API server as one user (see the module docstring)."""

    def __init__(
        self,
        config: Config,
        *,
        timeout: float | None = 60.0,
        warning_handler: WarningHandler = log_warnings,
        max_retries: int = MAX_RETRIES,
    ) -> None:
        self.config = config
        self.timeout = timeout
        self.warning_handler = warning_handler
        self.max_retries = max_retries
        self._session: aiohttp.ClientSession | None = None
        self._credential: _Credential | None = None
        self._token_read: tuple[float, str] | None = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> RestClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- credentials ---------------------------------------------------------

    async def _exec_credential(self, refresh: bool = False) -> _Credential | None:
        spec = self.config.exec
        if spec is None:
            return None
        async with self._lock:
            if refresh or self._credential is None or not self._credential.fresh():
                old = self._credential
                self._credential = await run_exec_plugin(
                    spec, self.config.server, self.config.ca_data
                )
                if old is not None and (old.cert, old.key) != (
                    self._credential.cert,
                    self._credential.key,
                ):
                    await self.close()  # a new client certificate needs a new session
            return self._credential

    def _file_token(self) -> str:
        # client-go re-reads a token file at most once a minute.
        now = time.monotonic()
        if self._token_read is None or now - self._token_read[0] > 60:
            self._token_read = (now, self.config.bearer_token())
        return self._token_read[1]

    async def _headers(self, refresh: bool) -> dict[str, str]:
        headers = {"User-Agent": self.config.user_agent, **dict(self.config.extra_headers)}
        credential = await self._exec_credential(refresh)
        token = credential.token if credential else ""
        if not token:
            token = self._file_token() if self.config.token_file else self.config.token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif self.config.username:
            pair = f"{self.config.username}:{self.config.password}".encode()
            headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
        return headers

    async def _session_for(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            credential = await self._exec_credential()
            cert = (credential.cert if credential else None) or self.config.client_cert_data
            key = (credential.key if credential else None) or self.config.client_key_data
            context = _ssl_context(self.config, cert, key)
            self._session = aiohttp.ClientSession(
                base_url=self.config.server,
                connector=aiohttp.TCPConnector(ssl=context, limit=0),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=30),
            )
        return self._session

    # --- requests --------------------------------------------------------------

    @asynccontextmanager
    async def _response(
        self,
        method: str,
        path: str,
        *,
        params: Params | None,
        body: Body,
        content_type: str,
        accept: str,
        request_timeout: float | None,
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """A successful response, after the retries the module docstring lists."""
        query = {k: _query_value(v) for k, v in (params or {}).items() if v is not None}
        data: bytes | None
        if body is None or isinstance(body, bytes):
            data = body
        else:
            data = orjson.dumps(body)
            content_type = content_type or "application/json"
        attempt, refreshed = 0, False
        while True:
            session = await self._session_for()
            headers = await self._headers(refresh=False)
            headers["Accept"] = accept
            if data is not None:
                headers["Content-Type"] = content_type or "application/json"
            kwargs: dict[str, Any] = {}
            if self.config.proxy_url:
                kwargs["proxy"] = self.config.proxy_url
            if self.config.tls_server_name:
                kwargs["server_hostname"] = self.config.tls_server_name
            try:
                response = await session.request(
                    method,
                    path,
                    params=query,
                    data=data,
                    headers=headers,
                    timeout=aiohttp.ClientTimeout(total=request_timeout),
                    **kwargs,
                )
            except (aiohttp.ClientConnectionError, TimeoutError) as e:
                if method in _SAFE and attempt < self.max_retries:
                    await asyncio.sleep(backoff(attempt))
                    attempt += 1
                    continue
                raise ApiError(
                    code=503, reason="ServiceUnavailable", message=f"{method} {path}: {e!r}"
                ) from e
            try:
                warnings = parse_warnings(response.headers.getall("Warning", []))
                if warnings:
                    self.warning_handler(warnings)
                if response.status < 400:
                    yield response
                    return
                error = api_error(response.status, await response.read(), response.headers)
            finally:
                response.release()
            if isinstance(error, Unauthorized) and self.config.exec and not refreshed:
                await self._exec_credential(refresh=True)
                refreshed = True
                continue
            retry = isinstance(error, TooManyRequests) or (
                method in _SAFE
                and error.code in (503, 504)
                and error.retry_after_seconds is not None
            )
            if retry and attempt < self.max_retries:
                wait = error.retry_after_seconds
                await asyncio.sleep(wait if wait is not None else backoff(attempt))
                attempt += 1
                continue
            raise error

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: Body = None,
        content_type: str = "",
        accept: str = "application/json",
        request_timeout: float | None = None,
    ) -> Any:
        """The decoded JSON a request answers with (None for an empty body)."""
        raw = await self.request_bytes(
            method,
            path,
            params=params,
            body=body,
            content_type=content_type,
            accept=accept,
            request_timeout=request_timeout,
        )
        return orjson.loads(raw) if raw else None

    async def request_bytes(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        body: Body = None,
        content_type: str = "",
        accept: str = "application/json",
        request_timeout: float | None = None,
    ) -> bytes:
        """The body a request answers with, as sent (YAML, a table, protobuf...)."""
        async with self._response(
            method,
            path,
            params=params,
            body=body,
            content_type=content_type,
            accept=accept,
            request_timeout=request_timeout if request_timeout is not None else self.timeout,
        ) as response:
            return await response.read()

    async def stream_lines(
        self, path: str, *, params: Params | None = None, request_timeout: float | None = None
    ) -> AsyncIterator[bytes]:
        """The lines of a streamed GET (a watch), as they arrive; an event of any
        size is one line."""
        async with self._response(
            "GET",
            path,
            params=params,
            body=None,
            content_type="",
            accept="application/json",
            request_timeout=request_timeout,
        ) as response:
            pending = b""
            async for chunk in response.content.iter_any():
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield line
            if pending.strip():
                yield pending


def _query_value(value: str | int | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
