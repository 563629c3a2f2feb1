"""strata.serviceaccounts: key ids, JWKs and signatures as kube makes them.

The RSA key below is kube-apiserver's from a recorded run (../shared/kube, its
pki/sa.pub): kube's /openid/v1/jwks listed it with exactly the JWK here, and
its tokens' headers named this kid."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import jwt
import orjson
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from strata import serviceaccounts as sa

KUBE_SA_PUB = b"""-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAvzZhbq8HKkFtUe/UWDGb
kF99bDzAGbP/ujw99rrz0nJ/95CjTemRmAcNveo3ONBdclNAlXx6qn7WcbUZYPC/
AtqZKBj5QK2xiYHohqLJw7CZsHmyJekJHLU436Rna6ieAfNLPdsoimuzOKqlQafQ
/P3EWxRZ1IDpKGrIl0wvbNRpB30QAMyPl0Pig7GXpBmKVqjPOBmi38+vTcsbwbhJ
DcIH+wBN5tc625i9UJLAd1SPwbdwzI+YaAUDZeu0FDICBwKfzY2tZ8f+yq87jeTI
fI3E0+XppqK/KnuMP6xwgk4RCTsX/bDepO772QSWDqSufnVjEMLSA7Nnhbo0IVaB
AwIDAQAB
-----END PUBLIC KEY-----
"""
# kube's /openid/v1/jwks for that key, as it answered.
KUBE_JWK = (
    b'{"use":"sig","kty":"RSA","kid":"XLkH3efDT161MSDWOIDUZMGtnHEqYiv-dgRLMj4YI_U",'
    b'"alg":"RS256","n":"vzZhbq8HKkFtUe_UWDGbkF99bDzAGbP_ujw99rrz0nJ_95CjTemRmAcNveo3ONBdclNAl'
    b"Xx6qn7WcbUZYPC_AtqZKBj5QK2xiYHohqLJw7CZsHmyJekJHLU436Rna6ieAfNLPdsoimuzOKqlQafQ_P3EWxRZ1"
    b"IDpKGrIl0wvbNRpB30QAMyPl0Pig7GXpBmKVqjPOBmi38-vTcsbwbhJDcIH-wBN5tc625i9UJLAd1SPwbdwzI-YaA"
    b"UDZeu0FDICBwKfzY2tZ8f-yq87jeTIfI3E0-XppqK_KnuMP6xwgk4RCTsX_bDepO772QSWDqSufnVjEMLSA7Nnhbo0"
    b'IVaBAw","e":"AQAB"}'
)


def test_kid_and_jwk_are_kubes() -> None:
    (key,) = sa.load_public_keys(KUBE_SA_PUB)
    assert sa.key_id(key) == "XLkH3efDT161MSDWOIDUZMGtnHEqYiv-dgRLMj4YI_U"
    assert orjson.dumps(sa.jwk(key)) == KUBE_JWK
    assert sa.algorithm(key) == "RS256"


def test_an_ec_key_signs_es256_with_gojose_fields() -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    public = private.public_key()
    jwk = sa.jwk(public)
    assert list(jwk) == ["use", "kty", "kid", "crv", "alg", "x", "y"]
    assert (jwk["crv"], jwk["alg"]) == ("P-256", "ES256")
    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert (
        jwk["kid"] == base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()
    )
    token = sa.sign({"sub": "x", "aud": ["a"], "iss": "i"}, private)
    header, payload, _ = token.split(".")
    assert orjson.loads(base64.urlsafe_b64decode(header + "==")) == {
        "alg": "ES256",
        "kid": jwk["kid"],
    }
    # go-jose writes the claims in key order.
    assert base64.urlsafe_b64decode(payload + "==") == b'{"aud":["a"],"iss":"i","sub":"x"}'
    verified = jwt.decode(token, jwt.PyJWK(jwk).key, algorithms=["ES256"], audience="a", issuer="i")
    assert verified["sub"] == "x"


def test_key_files_as_kube_reads_them(tmp_path: Path) -> None:
    private, public = sa.ensure_key_pair(tmp_path)
    assert private.stat().st_mode & 0o077 == 0
    from_private = sa.load_public_keys(private.read_bytes())
    from_public = sa.load_public_keys(public.read_bytes())
    assert [sa.key_id(k) for k in from_private] == [sa.key_id(k) for k in from_public]
    # Both in one file: two keys.
    assert len(sa.load_public_keys(private.read_bytes() + public.read_bytes())) == 2
    with pytest.raises(sa.KeyFileError, match="no public keys found"):
        sa.load_public_keys(b"nothing")
    assert sa.ensure_key_pair(tmp_path) == (private, public)


def test_usernames() -> None:
    assert sa.username("ns", "robot") == "system:serviceaccount:ns:robot"
    assert sa.split_username("system:serviceaccount:ns:robot") == ("ns", "robot")
    # kube's SplitUsername: a valid namespace and name, nothing more.
    for other in ("system:serviceaccount:bad", "system:serviceaccount:a:b:c", "bob"):
        assert sa.split_username(other) is None
    assert sa.split_username("system:serviceaccount:NS:robot") is None
