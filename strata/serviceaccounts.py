"""Service-account tokens as kube makes and reads them, shared by the registry
(which signs them: the TokenRequest subresource and the token controller's
legacy Secrets) and the gateway (which verifies them on every request and
publishes the issuer's keys): the signing keys and their kube key ids and JWKs,
the claims of bound and legacy tokens, and the user a token names
(k8s.io/apiserver's serviceaccount.MakeUsername and SplitUsername).

A key file is PEM, as kube reads --service-account-key-file and
--service-account-signing-key-file: RSA (RS256) or EC P-256/384/521 keys
(ES256/384/512); public keys, private keys (their public half) and
certificates (their key) all verify.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
from pathlib import Path
from typing import Any

import jwt
import orjson
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from strata import service
from strata.api import names
from strata.tls import write_private

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey

# kube's defaults (kubeadm's issuer; the API audiences default to the issuers).
DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
LEGACY_ISSUER = "kubernetes/serviceaccount"
USERNAME_PREFIX = "system:serviceaccount:"
ALL_GROUP = "system:serviceaccounts"
# kube's user extra naming the credential (a token's jti, a certificate's hash).
CREDENTIAL_ID = "authentication.kubernetes.io/credential-id"
# The private claims of a bound token, and a legacy token's flat ones.
KUBERNETES_CLAIM = "kubernetes.io"
LEGACY_NAMESPACE = "kubernetes.io/serviceaccount/namespace"
LEGACY_SECRET = "kubernetes.io/serviceaccount/secret.name"
LEGACY_NAME = "kubernetes.io/serviceaccount/service-account.name"
LEGACY_UID = "kubernetes.io/serviceaccount/service-account.uid"

_CURVES = {"secp256r1": ("ES256", "P-256", 32), "secp384r1": ("ES384", "P-384", 48)}
_CURVES["secp521r1"] = ("ES512", "P-521", 66)
_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z ]+)-----.+?-----END \1-----", re.DOTALL)


class KeyFileError(ValueError):
    """A key file kube would not take (says which and why)."""


# --- the flags both the registry and the gateway take -------------------------------


def issuer_flags(parser: argparse.ArgumentParser) -> None:
    """kube's --service-account-issuer and --api-audiences: the registry signs
    with the first issuer and defaults a TokenRequest's audiences to the API
    audiences; the gateway accepts every issuer and requires an API audience.
    The same environment variables configure both services."""
    service.flag(
        parser,
        "service-account-issuer",
        "STRATA_SERVICE_ACCOUNT_ISSUER",
        DEFAULT_ISSUER,
        "Comma-separated issuers of service-account tokens: the first signs new tokens, "
        "all are accepted",
    )
    service.flag(
        parser,
        "api-audiences",
        "STRATA_API_AUDIENCES",
        "",
        "Comma-separated audiences a token must name to reach the API (default: the issuers)",
    )


def issuers_and_audiences(args: argparse.Namespace) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The issuers and API audiences issuer_flags gave."""
    issuers = tuple(i.strip() for i in args.service_account_issuer.split(",") if i.strip())
    audiences = tuple(a.strip() for a in args.api_audiences.split(",") if a.strip())
    if not issuers:
        raise ValueError("--service-account-issuer names no issuer")
    return issuers, audiences or issuers


# --- names -------------------------------------------------------------------------


def username(namespace: str, name: str) -> str:
    return f"{USERNAME_PREFIX}{namespace}:{name}"


def groups(namespace: str) -> tuple[str, ...]:
    """The groups every service account of namespace is in."""
    return (ALL_GROUP, f"{ALL_GROUP}:{namespace}")


def split_username(user: str) -> tuple[str, str] | None:
    """(namespace, name) of a service account's username, or None when user is
    not one (kube's SplitUsername: a valid namespace and account name)."""
    if not user.startswith(USERNAME_PREFIX):
        return None
    parts = user[len(USERNAME_PREFIX) :].split(":")
    if len(parts) != 2:
        return None
    namespace, name = parts
    if names.dns1123_label_errors(namespace) or names.dns1123_subdomain_errors(name):
        return None
    return namespace, name


# --- keys --------------------------------------------------------------------------


def public_der(public: PublicKey) -> bytes:
    return public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def key_id(public: PublicKey) -> str:
    """kube's keyIDFromPublicKey: the unpadded base64url SHA-256 of the key's
    PKIX DER (a key id that gives nothing of the key away)."""
    digest = hashlib.sha256(public_der(public)).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def algorithm(public: PublicKey) -> str:
    if isinstance(public, rsa.RSAPublicKey):
        return "RS256"
    curve = _CURVES.get(public.curve.name)
    if curve is None:
        raise KeyFileError(
            f"unknown private key curve {public.curve.name}, must be 256, 384, or 521"
        )
    return curve[0]


def _b64(value: int, size: int) -> str:
    raw = value.to_bytes(size, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwk(public: PublicKey) -> dict[str, str]:
    """The key as kube's /openid/v1/jwks lists it (go-jose's field order)."""
    head = {"use": "sig", "kty": "RSA" if isinstance(public, rsa.RSAPublicKey) else "EC"}
    head["kid"] = key_id(public)
    if isinstance(public, rsa.RSAPublicKey):
        numbers = public.public_numbers()
        modulus = (numbers.n.bit_length() + 7) // 8
        exponent = (numbers.e.bit_length() + 7) // 8
        return {
            **head,
            "alg": "RS256",
            "n": _b64(numbers.n, modulus),
            "e": _b64(numbers.e, exponent),
        }
    alg, crv, size = _CURVES[public.curve.name]
    point = public.public_numbers()
    return {**head, "crv": crv, "alg": alg, "x": _b64(point.x, size), "y": _b64(point.y, size)}


def _check(key: Any, source: str) -> None:
    if isinstance(key, rsa.RSAPublicKey | rsa.RSAPrivateKey):
        return
    if isinstance(key, ec.EllipticCurvePublicKey | ec.EllipticCurvePrivateKey):
        algorithm(key.public_key() if isinstance(key, ec.EllipticCurvePrivateKey) else key)
        return
    raise KeyFileError(f"{source}: not an RSA or ECDSA key")


def load_signing_key(pem: bytes, source: str = "key") -> PrivateKey:
    """The private key a PEM holds (kube's --service-account-signing-key-file)."""
    try:
        key = serialization.load_pem_private_key(pem, None)
    except (ValueError, TypeError) as e:
        raise KeyFileError(f"{source}: no private key: {e}") from None
    _check(key, source)
    assert isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey)
    return key


def _public_of(kind: bytes, block: bytes, source: str) -> PublicKey | None:
    loaded: Any
    try:
        if kind == b"CERTIFICATE":
            loaded = x509.load_pem_x509_certificate(block).public_key()
        elif kind.endswith(b"PRIVATE KEY"):
            loaded = serialization.load_pem_private_key(block, None).public_key()
        elif kind.endswith(b"PUBLIC KEY"):
            loaded = serialization.load_pem_public_key(block)
        else:
            return None
    except (ValueError, TypeError) as e:
        raise KeyFileError(f"{source}: cannot read a {kind.decode()}: {e}") from None
    _check(loaded, source)
    assert isinstance(loaded, rsa.RSAPublicKey | ec.EllipticCurvePublicKey)
    return loaded


def load_public_keys(pem: bytes, source: str = "key file") -> list[PublicKey]:
    """Every key a PEM file holds, as kube reads --service-account-key-file."""
    found = [
        key
        for match in _PEM_BLOCK.finditer(pem)
        if (key := _public_of(match.group(1), match.group(0), source)) is not None
    ]
    if not found:
        raise KeyFileError(f"{source}: no public keys found")
    return found


def ensure_key_pair(directory: Path, stem: str = "sa") -> tuple[Path, Path]:
    """(private, public) PEM files in directory (kubeadm's sa.key and sa.pub),
    an RSA 2048 pair made when missing: what `make run` signs with."""
    private, public = directory / f"{stem}.key", directory / f"{stem}.pub"
    if not private.exists():
        directory.mkdir(parents=True, exist_ok=True)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        write_private(
            private,
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            ),
        )
        public.unlink(missing_ok=True)
    if not public.exists():
        loaded = load_signing_key(private.read_bytes(), str(private))
        public.write_bytes(
            loaded.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
    return private, public


# --- tokens ------------------------------------------------------------------------


def sign(claims: dict[str, Any], key: PrivateKey) -> str:
    """claims as a compact JWS, as kube's go-jose writes it: a header of alg and
    kid only, the claims' keys sorted at every level."""
    public = key.public_key()
    payload = orjson.dumps(claims, option=orjson.OPT_SORT_KEYS)
    headers = {"kid": key_id(public), "typ": None}
    return jwt.api_jws.encode(payload, key, algorithm=algorithm(public), headers=headers)


def bound_claims(
    *,
    issuer: str,
    audiences: list[str],
    namespace: str,
    account: tuple[str, str],
    secret: tuple[str, str] | None,
    issued_at: int,
    expiration_seconds: int,
    jti: str,
) -> dict[str, Any]:
    """A TokenRequest's token (kube's serviceaccount.Claims): account and
    secret are (name, uid)."""
    private: dict[str, Any] = {
        "namespace": namespace,
        "serviceaccount": {"name": account[0], "uid": account[1]},
    }
    if secret is not None:
        private["secret"] = {"name": secret[0], "uid": secret[1]}
    return {
        "aud": audiences,
        "exp": issued_at + expiration_seconds,
        "iat": issued_at,
        "iss": issuer,
        "jti": jti,
        KUBERNETES_CLAIM: private,
        "nbf": issued_at,
        "sub": username(namespace, account[0]),
    }


def legacy_claims(namespace: str, account: tuple[str, str], secret: str) -> dict[str, Any]:
    """A token controller's token for a kubernetes.io/service-account-token
    Secret (kube's LegacyClaims): no expiry, no audience."""
    return {
        "iss": LEGACY_ISSUER,
        LEGACY_NAMESPACE: namespace,
        LEGACY_SECRET: secret,
        LEGACY_NAME: account[0],
        LEGACY_UID: account[1],
        "sub": username(namespace, account[0]),
    }
