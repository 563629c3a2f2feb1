"""The cacher: a watch cache in front of the storage service, serving the same
strata.storage.v1.Storage contract (kube's --watch-cache)."""
