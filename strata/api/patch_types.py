"""The media types of a PATCH, which say how its body changes the object:
named once for the gateway (which checks a patch's type and body) and the
registry (which applies the patch inside its conflict loop)."""

from __future__ import annotations

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
SUPPORTED = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH)
# As kube, custom resources take no strategic merge patches: they have no Go
# types to read merge keys from.
FOR_CUSTOM = (JSON_PATCH, MERGE_PATCH)
# What kube's PATCH routes consume: go-restful refuses any other Content-Type
# before kube reads the body.
CONSUMED = (*SUPPORTED, APPLY_PATCH)
