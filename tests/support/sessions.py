"""An HTTPS session to a running system's gateway as its admin: the shared
session fixture's, and one of a test's own when closing it must close its
connections (a watch's client going away) or the system is a test's own."""

from __future__ import annotations

import ssl

import aiohttp

from strata.dev import System


def admin_session(system: System) -> aiohttp.ClientSession:
    assert system.endpoints is not None
    context = ssl.create_default_context(cafile=str(system.ca_file))
    return aiohttp.ClientSession(
        base_url=system.endpoints.gateway,
        headers={"Authorization": f"Bearer {system.admin_token}"},
        connector=aiohttp.TCPConnector(ssl=context),
    )
