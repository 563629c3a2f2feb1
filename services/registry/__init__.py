"""The registry: resource catalog, generic Store and per-resource strategies."""
