"""Mutual TLS for the storage contract servers the tests run in their own
process (tests/conftest.py's storage service and cacher): certificates of a
CA made in memory for this run, and the same check of the caller
(strata.tls) as the services' own servers make, so the conformance suite and
the storage tests cross the hop as the registry does."""

from __future__ import annotations

import functools

import grpc

from strata import tls


@functools.cache
def _ca() -> tls.Authority:
    return tls.new_ca("strata-test-ca")


@functools.cache
def identity(service: str) -> tls.Identity:
    """service's identity ("storage", "cacher", "registry", ...) under this run's CA."""
    ca = _ca()
    return tls.Identity(tls.cert_pem(ca[0]), *tls.certify(ca, service))


def server(service: str) -> grpc.aio.Server:
    """A server that runs only the calls of service's callers (tls.CALLERS)."""
    check = tls.AllowedCallers(tls.common_name(service), tls.CALLERS[service])
    return grpc.aio.server(interceptors=[check])


def listen(server: grpc.aio.Server, service: str, address: str = "127.0.0.1:0") -> int:
    """Serve on address as service, over mutual TLS; the port."""
    return server.add_secure_port(address, tls.server_credentials(identity(service)))


def dial(address: str, caller: str = "registry") -> grpc.aio.Channel:
    """A channel to a storage contract server on address, as caller."""
    return grpc.aio.secure_channel(
        address,
        tls.channel_credentials(identity(caller)),
        options=tls.channel_options(tls.STORAGE_CONTRACT),
    )
