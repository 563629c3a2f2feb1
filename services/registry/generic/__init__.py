"""The generic machinery every resource is served by (kube's
k8s.io/apiserver/pkg/registry/generic): the Store and its parts (decoding, type
checks, the scale subresource, namespace checks, list and watch options,
updates, deletion, the storage-error-to-Status map), the strategy protocols and
the `Resource` declaration a resource fills in, Tables, warnings and schema
pruning. It imports no resource, no API extension and no controller: they are
given to it (import-linter contracts in pyproject.toml).
"""
