"""A resource's objects on their way between a request, storage and the answer:
a body decoded as kube's decoder does (its kind checked, the fields its schema
does not know pruned, its values held to their types), and objects converted
between the version served and the version stored."""

from __future__ import annotations

from typing import Any

import orjson

from services.registry.generic import schema, typed, warnings
from services.registry.generic.bodies import NO_SCHEME, Scheme, decode_body
from services.registry.generic.declarations import Resource
from services.registry.generic.strategy import DecodableStrategy, check_decodable
from strata.api import key_order, strict_decoding
from strata.api.schemas import OBJECT_META
from strata.storage import envelopes

Obj = dict[str, Any]


class Codec:
    def __init__(self, resource: Resource, scheme: Scheme = NO_SCHEME) -> None:
        self.resource = resource
        self._scheme = scheme
        # Found once: a runtime_checkable protocol's isinstance inspects the
        # class on every call.
        strategy = resource.strategy
        self._decodable = strategy if isinstance(strategy, DecodableStrategy) else None
        self._converts = resource.storage_api_version != resource.api_version
        # The types kube's decoder holds a request's object to: every kind's
        # metadata, and a built-in kind's own fields (a custom resource's schema
        # validation answers for its own).
        own = (resource.schema or {}) if not resource.custom else {}
        self._decoded_types: Obj = {
            **own,
            "type": "object",
            "properties": {**(own.get("properties") or {}), "metadata": OBJECT_META},
        }

    def decode(self, body: bytes) -> tuple[Obj, bool]:
        """A request body as an object of this resource: without the fields its
        schema does not know (reported as the request's fieldValidation asks),
        normalized; and whether all its values are of their schema's types (the
        typed walk went through all of it, so check_types need not walk again)."""
        r = self.resource
        obj = decode_body(body, r, self._scheme)
        # Counted before anything changes obj: against the keys its text gives,
        # they say whether a field may be given twice (strict_decoding.may_repeat).
        keys = strict_decoding.keys_in(obj) if warnings.finds_duplicates() else None
        typed_ok = typed.decoded(obj, self._decoded_types) is None
        unknown = schema.prune(obj, r.schema) if r.schema is not None else []
        warnings.undecoded_fields(r.kind, r.version, body, unknown, typed=not r.custom, keys=keys)
        if r.normalize is not None:
            r.normalize(obj)  # a custom resource's defaults: walked again after
            typed_ok = False
        return obj, typed_ok

    def check_types(self, obj: Obj, typed_ok: bool = False) -> None:
        """kube's decoder's 400 for a value of the wrong type: in its own words
        where the strategy names the Go types, else from the kind's schema. A
        second walk of obj, which also makes Go's values of the nulls the store
        may have put in (an update's creationTimestamp from an old object without
        one), unless typed_ok: the body's own walk found every value typed and
        only strings were added since (a create's)."""
        r = self.resource
        if self._decodable is not None:
            check_decodable(obj, r.kind, r.version, self._decodable.go_types)
        if not typed_ok:
            typed.check(obj, self._decoded_types, r.kind, r.version)

    def final(self, key: str, obj: Obj) -> envelopes.Final:
        """obj as storage keeps it at key (at the storage version, in kube's key
        order, without resourceVersion), with the envelope that lets storage
        store it without decoding it: the one encoding of a write.
        ObjectTooLarge over etcd's limit."""
        if self._converts:
            obj = {**obj, "apiVersion": self.resource.storage_api_version}
        return envelopes.final(key, obj)

    def loaded(self, value: bytes) -> Obj:
        """A stored object at the version served here."""
        obj: Obj = orjson.loads(value)
        if self._converts:
            obj["apiVersion"] = self.resource.api_version
        return obj

    def answered(self, obj: Obj) -> bytes:
        """An object storage never saw (a dry run's) as storage would answer it:
        in kube's key order."""
        return key_order.dumps(obj, custom=self.resource.custom)

    def served(self, value: bytes) -> bytes:
        """A stored object's JSON at the version served here."""
        return orjson.dumps(self.loaded(value)) if self._converts else value
