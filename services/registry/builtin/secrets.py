"""The strategies of core/v1 Secrets and ServiceAccounts.

Secrets carry their data base64-encoded in JSON, as kube serves them; a value
that is not base64 (as Go decodes it: line breaks skipped, padding required)
cannot be decoded into a Secret at all (400), and one that is is kept as kube
keeps it, decoded, so it reads back canonical and on one line. Keys, size and
each type's required keys are field rules (422). stringData is a write-only
convenience folded into data on every write, as kube's conversion does.
"""

from __future__ import annotations

import base64
from typing import Any

from services.registry.generic.strategy import (
    Obj,
    config_key_causes,
    immutable_when_set,
    validate_object_meta,
    validate_object_meta_update,
)
from strata.api import base64data, errors
from strata.api.causes import immutable, required, too_long
from strata.api.errors import Cause

OPAQUE = "Opaque"
SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"
SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"
BASIC_AUTH = "kubernetes.io/basic-auth"
# core.MaxSecretSize: the decoded values together.
SECRET_MAX_BYTES = 1024 * 1024
# The data keys each type requires (kube's ValidateSecret).
REQUIRED_KEYS: dict[str, tuple[str, ...]] = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def _decoded(value: str) -> bytes:
    """One data value, or the 400 kube's decoder gives for it."""
    try:
        return base64data.decode(value)
    except base64data.IllegalBase64 as e:
        raise errors.undecodable("Secret", "v1", str(e)) from None


def _decode_data(obj: Obj) -> None:
    """data's values as kube holds them once decoded: re-encoded, canonical
    and on one line (what it stores and serves), or the request's 400."""
    data: dict[str, str] = obj.get("data") or {}
    for key, value in data.items():
        data[key] = base64.b64encode(_decoded(value)).decode()


def _fold_string_data(obj: Obj) -> None:
    string_data: dict[str, Any] = obj.pop("stringData", None) or {}
    if string_data:
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


class SecretStrategy:
    namespaced = True

    def prepare_for_create(self, obj: Obj) -> None:
        _decode_data(obj)
        _fold_string_data(obj)
        obj["type"] = obj.get("type") or OPAQUE

    def validate(self, obj: Obj) -> list[Cause]:
        causes = validate_object_meta(obj, namespaced=True, name_is_label=False)
        data: dict[str, str] = obj.get("data") or {}
        size = 0
        for key, value in data.items():
            causes.extend(config_key_causes("data", key))
            size += len(_decoded(value))
        if size > SECRET_MAX_BYTES:
            causes.append(too_long("data", SECRET_MAX_BYTES))
        kind = obj.get("type", "")
        if kind == SERVICE_ACCOUNT_TOKEN:
            annotations = obj["metadata"].get("annotations") or {}
            if not annotations.get(SERVICE_ACCOUNT_NAME_KEY):
                causes.append(required(f"metadata.annotations[{SERVICE_ACCOUNT_NAME_KEY}]"))
        elif kind == BASIC_AUTH and "username" not in data and "password" not in data:
            # Either may be empty, but one of them must be there.
            causes += [required("data[username]"), required("data[password]")]
        causes.extend(
            required(f"data[{key}]") for key in REQUIRED_KEYS.get(kind, ()) if key not in data
        )
        return causes

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        _decode_data(obj)
        _fold_string_data(obj)
        obj["type"] = obj.get("type") or OPAQUE

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        causes = validate_object_meta_update(obj, old)
        if obj.get("type") != old.get("type"):
            causes.append(immutable("type", obj.get("type")))
        causes += immutable_when_set(obj, old, ("data",))
        return causes + self.validate(obj)


class ServiceAccountStrategy:
    """ServiceAccounts keep what they are given; strata mints no tokens."""

    namespaced = True

    def prepare_for_create(self, obj: Obj) -> None:
        pass

    def validate(self, obj: Obj) -> list[Cause]:
        return validate_object_meta(obj, namespaced=True, name_is_label=False)

    def prepare_for_update(self, obj: Obj, old: Obj) -> None:
        pass

    def validate_update(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_object_meta_update(obj, old) + self.validate(obj)
