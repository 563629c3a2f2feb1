"""strata's certificates: making a CA and the certificates it signs (the
gateway's and those of the internal gRPC hops), strata's internal PKI (one
certificate per service, who may call whom), etcd's certificates for a
deployment, and mutual TLS on a gRPC hop (credentials, and the check of the
caller before any servicer code)."""

from strata.tls._certificates import (
    Authority,
    cert_pem,
    ensure_ca,
    ensure_leaf,
    issue,
    key_pem,
    load_ca,
    new_ca,
    write_private,
)
from strata.tls._etcd import ETCD_CA_CERT, ETCD_CLIENT, ETCD_SERVER, ensure_etcd
from strata.tls._grpc import (
    AllowedCallers,
    caller,
    channel_credentials,
    channel_options,
    server_credentials,
)
from strata.tls._hops import (
    CA_CERT,
    CA_KEY,
    CALLERS,
    REGISTRY_CONTRACT,
    SERVES,
    SERVICES,
    STORAGE_CONTRACT,
    Files,
    Identity,
    certify,
    common_name,
    ensure,
    files,
)

__all__ = [
    "CALLERS",
    "CA_CERT",
    "CA_KEY",
    "ETCD_CA_CERT",
    "ETCD_CLIENT",
    "ETCD_SERVER",
    "REGISTRY_CONTRACT",
    "SERVES",
    "SERVICES",
    "STORAGE_CONTRACT",
    "AllowedCallers",
    "Authority",
    "Files",
    "Identity",
    "caller",
    "cert_pem",
    "certify",
    "channel_credentials",
    "channel_options",
    "common_name",
    "ensure",
    "ensure_ca",
    "ensure_etcd",
    "ensure_leaf",
    "files",
    "issue",
    "key_pem",
    "load_ca",
    "new_ca",
    "server_credentials",
    "write_private",
]
