"""strata: a Kubernetes-compatible declarative API server, as a shared library.

Everything the four services have in common lives here once: apimachinery
helpers (strata.api), the storage contract and its gRPC adapter
(strata.storage), the etcd v3 client (strata.etcd), telemetry setup
(strata.telemetry) and the generated protobuf stubs (strata.proto).
"""
