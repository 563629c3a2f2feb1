"""Session fixtures: one real strata system (etcd plus the four services, as
`make run` starts them) with an OTLP receiver collecting its spans."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from strata.dev import OtlpReceiver, System


@pytest.fixture(scope="session")
def otlp() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    receiver.start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="session")
def system(tmp_path_factory: pytest.TempPathFactory, otlp: OtlpReceiver) -> Iterator[System]:
    home: Path = tmp_path_factory.mktemp("strata-home")
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint,
        "OTEL_EXPORTER_OTLP_INSECURE": "true",
        "OTEL_BSP_SCHEDULE_DELAY": "200",
    }
    system = System(home, gateway_port=0, env=env)
    system.start()
    yield system
    system.stop()


@pytest.fixture(scope="session")
async def http(system: System) -> AsyncIterator[aiohttp.ClientSession]:
    """An HTTPS session to the gateway, authenticated as the admin user."""
    assert system.endpoints is not None
    context = ssl.create_default_context(cafile=str(system.ca_file))
    async with aiohttp.ClientSession(
        base_url=system.endpoints.gateway,
        headers={"Authorization": f"Bearer {system.admin_token}"},
        connector=aiohttp.TCPConnector(ssl=context),
    ) as session:
        yield session
