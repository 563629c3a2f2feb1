"""The registry (python -m services.registry): Kubernetes API semantics over the
storage contract. The servicer (server.py) answers the Registry API from the
Stores served.py keeps; generic/ holds the Store and what every resource shares,
builtin/ the built-in resources, extensions/ CRDs and custom resources, and
controllers/ what runs while this replica leads.
"""
