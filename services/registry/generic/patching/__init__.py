"""PATCH in the registry: JSON, merge and strategic merge patches (merge.py)
and server-side apply (apply.py), applied to the object as the update loop
reads it (patcher.py), so that a patch makes one conflict loop, kube's patcher
within GuaranteedUpdate."""
