"""A test OIDC identity provider on loopback: its discovery document and JWKS
over HTTPS (a certificate from a CA of its own, which the gateway is told to
trust), and the tokens it mints, signed ES256 with a key only it holds. It
serves from a thread, so a gateway in another process can fetch its keys while
the test waits."""

from __future__ import annotations

import json
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from strata import serviceaccounts, tls

KID = "test-key"


class Issuer:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        authority = tls.new_ca("test-oidc-ca")
        cert, key = tls.issue(authority, "test-oidc-issuer", hosts=["127.0.0.1"], server=True)
        self.ca_pem = tls.cert_pem(authority[0]).decode()
        (directory / "tls.crt").write_bytes(cert)
        tls.write_private(directory / "tls.key", key)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(directory / "tls.crt", directory / "tls.key")
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.fetched = 0

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body: Any = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/keys"}
                elif self.path == "/keys":
                    issuer.fetched += 1
                    jwk = {**serviceaccounts.jwk(issuer._key.public_key()), "kid": KID}
                    body = {"keys": [jwk]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        return Handler

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop serving (if started) and close the socket."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def mint(self, **claims: Any) -> str:
        """A token from this issuer: claims over iss, iat and a ten minutes' exp."""
        now = int(time.time())
        given = {"iss": self.url, "iat": now, "exp": now + 600, **claims}
        return jwt.encode(given, self._key, algorithm="ES256", headers={"kid": KID})

    def configuration(self, audience: str, **more: Any) -> dict[str, Any]:
        """An AuthenticationConfiguration trusting this issuer for audience."""
        return {
            "apiVersion": "apiserver.config.k8s.io/v1",
            "kind": "AuthenticationConfiguration",
            "jwt": [
                {
                    "issuer": {
                        "url": self.url,
                        "audiences": [audience],
                        "certificateAuthority": self.ca_pem,
                    },
                    **more,
                }
            ],
        }
