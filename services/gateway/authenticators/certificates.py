"""The user a client certificate names (kube's x509 CommonNameUserConversion):
the TLS handshake has verified it against --client-ca-file; the user is its
CommonName, the groups its Organizations, and kube's credential id the
SHA-256 of the certificate. A connection's certificate is read once: each
certificate's user is remembered."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.x509.oid import NameOID

from services.gateway.user import User, extra_of
from strata.serviceaccounts import CREDENTIAL_ID

# How many certificates' users are remembered.
REMEMBERED = 1024
_users: OrderedDict[bytes, User | None] = OrderedDict()


def _user_of(der: bytes) -> User | None:
    cert = x509.load_der_x509_certificate(der)
    names = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)]
    if not names:
        return None
    groups = tuple(
        str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    )
    fingerprint = hashlib.sha256(der).hexdigest()
    extra = extra_of({CREDENTIAL_ID: [f"X509SHA256={fingerprint}"]})
    return User(names[0], "", groups, extra)


def certificate_user(request: web.Request) -> User | None:
    """The user of the request's verified client certificate (None without one)."""
    transport = request.transport
    tls: Any = transport.get_extra_info("ssl_object") if transport is not None else None
    der = tls.getpeercert(binary_form=True) if tls is not None else None
    if not der:
        return None
    if der in _users:
        _users.move_to_end(der)
        return _users[der]
    user = _users[der] = _user_of(der)
    if len(_users) > REMEMBERED:
        _users.popitem(last=False)
    return user
