"""The Kubernetes REST handlers: every /api and /apis path turned into Registry
calls, one module per verb family (reads.py, watch.py, writes.py,
patching.py, deletes.py, discovery.py), routed by the table in routes.py.
Objects pass through as the registry's JSON bytes; lists and watch events are
framed around them without decoding.

The handlers run behind the request chain (services/gateway/chain/) and import
none of it, nor any authorizer or admission plugin: writes go through the
admission seam (services/gateway/admission/) with the plugins the app hands
them. import-linter contracts in pyproject.toml hold this."""

from services.gateway.handlers.routes import ResourceHandlers

__all__ = ["ResourceHandlers"]
