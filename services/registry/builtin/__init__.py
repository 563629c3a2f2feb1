"""The built-in resources: one module per API group (core, apps, rbac,
coordination, events, services), each resource a strategy plus its `Resource`
declaration, with their OpenAPI schemas (kind_schemas.py), the Service IP and
port allocator, the default RBAC policy, and the catalog `BUILT_IN` that gathers
them (resources.py).
"""
