"""The storage service: strata.storage.v1.Storage implemented on etcd v3."""
