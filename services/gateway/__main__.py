"""python -m services.gateway: Kubernetes REST over HTTPS on 127.0.0.1."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ssl
from pathlib import Path

from aiohttp import web

from services.gateway import pki
from services.gateway.app import build_app
from services.gateway.audit import flags as audit_flags
from services.gateway.authenticators import flags as authentication_flags
from services.gateway.authenticators.config import ConfigError
from services.gateway.authenticators.static import TokenFileError, read_token_file
from services.gateway.authorizers import modes as authorization_modes
from services.gateway.chain import bodies, limits
from services.gateway.identity import IdentityLease, advertise_address
from strata import service, telemetry
from strata.proto.registry.v1 import registry_pb2_grpc
from strata.tls import REGISTRY_CONTRACT

log = telemetry.get_logger("strata.gateway")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m services.gateway", description=__doc__)
    service.flag(parser, "listen", "STRATA_GATEWAY_LISTEN", "127.0.0.1:6443", "HTTPS address")
    service.flag(parser, "registry", "STRATA_REGISTRY", "127.0.0.1:2383", "registry address")
    service.tls_flags(parser, "gateway")
    service.flag(parser, "home", "STRATA_HOME", ".strata", "where certificates and tokens live")
    service.flag(
        parser,
        "advertise-address",
        "STRATA_GATEWAY_ADVERTISE_ADDRESS",
        "",
        "The IP the kubernetes Service's Endpoints give for this gateway (default: the one "
        "it listens on)",
    )
    service.flag(
        parser,
        "max-requests-inflight",
        "STRATA_GATEWAY_MAX_REQUESTS_INFLIGHT",
        str(limits.MAX_READ_ONLY_IN_FLIGHT),
        "read-only requests served at once, past which they get 429 (0: no limit)",
    )
    service.flag(
        parser,
        "max-mutating-requests-inflight",
        "STRATA_GATEWAY_MAX_MUTATING_REQUESTS_INFLIGHT",
        str(limits.MAX_MUTATING_IN_FLIGHT),
        "mutating requests served at once, past which they get 429 (0: no limit)",
    )
    service.flag(
        parser,
        "request-timeout",
        "STRATA_GATEWAY_REQUEST_TIMEOUT",
        "60s",
        "how long a request that is not a watch may take before it is answered 504",
    )
    service.flag(
        parser,
        "client-ca-file",
        "STRATA_CLIENT_CA_FILE",
        "",
        "CA bundle client certificates are verified against; the user is the certificate's "
        "CommonName (default: strata's own CA in --home)",
    )
    service.flag(
        parser,
        "token-auth-file",
        "STRATA_TOKEN_AUTH_FILE",
        "",
        'kube\'s static token file: token,user,uid[,"group1,group2"] per line',
    )
    audit_flags.add_flags(parser)
    authorization_modes.add_flags(parser)
    authentication_flags.add_flags(parser)
    args = parser.parse_args()
    # Checked first, as kube checks its flags before it starts anything.
    try:
        args.authorization = authorization_modes.options_from(args)
    except ValueError as e:
        raise SystemExit(f"strata-gateway: {e}") from None
    args.identity = service.tls_identity(args, "strata-gateway")
    telemetry.setup("strata-gateway")
    service.run(_run(args))


# The most one request line or header may be.
MAX_HEADER_BYTES = 64 * 1024
HEADER_TIMEOUT_SECONDS = 32.0


def _runner(app: web.Application) -> web.AppRunner:
    """How the gateway's HTTP server treats connections and requests."""
    # A request whose client has gone is cancelled, as kube cancels its context:
    # above all a watch, which would otherwise hold its registry watch (and the
    # cacher's watcher) until its next event or its timeout. A request body is
    # read as sent, whatever its Content-Encoding says (kube decodes none: a
    # gzip body is a 400 on its bytes, not a ConfigMap).
    return web.AppRunner(
        app,
        access_log=None,
        handle_signals=False,
        shutdown_timeout=5,
        handler_cancellation=True,
        auto_decompress=False,
        # kube takes headers of up to 1 MiB (large bearer tokens among them);
        # aiohttp's 8 KiB would refuse an OIDC token with many groups. Bounded
        # per header (and by the count of headers) rather than in all.
        max_line_size=MAX_HEADER_BYTES,
        max_field_size=MAX_HEADER_BYTES,
        # kube's ReadHeaderTimeout: a connection that has not sent a whole
        # request's headers in 32 s (idle, or a slow client holding partial
        # headers) is closed, so such connections cannot pile up.
        keepalive_timeout=HEADER_TIMEOUT_SECONDS,
        # A request answered before its body has all arrived (past the
        # deadline, past the size limit, refused before it was read) has what
        # else comes drained this long, then its connection closed (aiohttp's
        # 10 s would hold a slow body's connection well past its deadline).
        lingering_time=bodies.DRAIN_SECONDS,
    )


async def _run(args: argparse.Namespace) -> None:
    host, _, port = args.listen.rpartition(":")
    home = Path(args.home)
    ca, cert, key = pki.ensure_pki(home / "pki", sorted({host, "127.0.0.1", "localhost"}))
    token = pki.ensure_admin_token(home)
    try:
        tokens = read_token_file(Path(args.token_auth_file)) if args.token_auth_file else {}
    except (OSError, TokenFileError) as e:
        raise SystemExit(f"strata-gateway: --token-auth-file: {e}") from None
    try:
        audit = audit_flags.config_from(args)
    except audit_flags.FlagError as e:
        raise SystemExit(f"strata-gateway: {e}") from None
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert, key)
    # A client certificate is asked for, never required (tokens do as well).
    tls.verify_mode = ssl.CERT_OPTIONAL
    tls.load_verify_locations(args.client_ca_file or ca)
    channel = service.connect(args.registry, args.identity, REGISTRY_CONTRACT)
    try:
        authorization = authorization_modes.Configured(args.authorization, channel)
    except ValueError as e:
        raise SystemExit(f"strata-gateway: {e}") from None
    authorization.start()
    try:
        authn = authentication_flags.build(
            args,
            admin_token=token,
            token_file=tokens,
            registry=channel,
            advertise=advertise_address(args.listen, args.advertise_address),
        )
    except (authentication_flags.FlagError, ConfigError) as e:
        raise SystemExit(f"strata-gateway: {e}") from None
    app = build_app(
        registry_channel=channel,
        admin_token=token,
        server_address=args.listen,
        tokens=tokens,
        max_requests_in_flight=int(args.max_requests_inflight),
        max_mutating_requests_in_flight=int(args.max_mutating_requests_inflight),
        request_timeout_seconds=service.parse_duration(args.request_timeout),
        audit=audit,
        authorizer=authorization.authorizer,
        authn=authn,
    )
    runner = _runner(app)
    await runner.setup()
    site = web.TCPSite(runner, host, int(port), ssl_context=tls)
    await site.start()
    log.info("serving", listen=args.listen)
    address = advertise_address(args.listen, args.advertise_address)
    identity = IdentityLease(registry_pb2_grpc.RegistryStub(channel), address)
    renewing = asyncio.create_task(identity.run(), name="identity lease")
    try:
        await service.wait_for_signal()
    finally:
        log.info("stopping")
        renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewing
        await runner.cleanup()
        await authorization.stop()
        await channel.close()
        telemetry.shutdown()


if __name__ == "__main__":
    main()
