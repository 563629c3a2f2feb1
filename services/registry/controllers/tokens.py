"""kube-controller-manager's tokens controller, for legacy token Secrets: a
Secret of type kubernetes.io/service-account-token naming a ServiceAccount in
its kubernetes.io/service-account.name annotation gets what a pod once
mounted, as kube fills it in: data.token (a legacy token signed with the
registry's service-account key, issuer kubernetes/serviceaccount, unless the
Secret gives one), data["ca.crt"] (the --root-ca-file) and data.namespace, and
the account's uid in the kubernetes.io/service-account.uid annotation. A
Secret whose account does not exist, or is another one now (a uid that no
longer matches), is deleted: deleting an account takes its token Secrets with
it, and so their tokens stop working.

Two strata.client informers over the Registry API (ServiceAccounts and
Secrets) tell the controller what changed. An account the informer does not
show yet is read live before its Secret is deleted, as kube's controller looks
an account up on a cache miss.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from pathlib import Path
from typing import Any

import grpc
import orjson

from services.registry.builtin.resources import SECRETS, SERVICE_ACCOUNTS
from services.registry.builtin.secrets import SERVICE_ACCOUNT_NAME_KEY, SERVICE_ACCOUNT_TOKEN
from services.registry.builtin.serviceaccounts import Signer
from services.registry.controllers import rounds
from services.registry.controllers.informed import informer_for
from services.registry.generic.options import Rendering
from services.registry.generic.store import Store
from strata import telemetry
from strata.api.errors import StatusError
from strata.client import EventHandler
from strata.storage import Preconditions

SERVICE_ACCOUNT_UID_KEY = "kubernetes.io/service-account.uid"
RETRY_SECONDS = 1.0

Obj = dict[str, Any]
log = telemetry.get_logger("strata.registry.tokens")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class TokensController:
    def __init__(
        self,
        registry: grpc.aio.Channel,
        accounts: Store,
        secrets: Store,
        signer: Signer,
        root_ca: Path | None,
    ) -> None:
        """root_ca: the CA bundle a token Secret's ca.crt gets (kube's
        --root-ca-file), read when needed: a Secret filled in before the file
        exists gets it once it does."""
        self._accounts_store = accounts
        self._secrets_store = secrets
        self._signer = signer
        self._root_ca = root_ca
        self._accounts = informer_for(registry, SERVICE_ACCOUNTS)
        self._secrets = informer_for(registry, SECRETS)
        self.changed = asyncio.Event()
        touched = EventHandler(
            on_add=lambda *_: self.changed.set(),
            on_update=lambda *_: self.changed.set(),
            on_delete=lambda *_: self.changed.set(),
        )
        self._accounts.add_event_handler(touched)
        self._secrets.add_event_handler(touched)

    async def run(self) -> None:
        self._accounts.start()
        self._secrets.start()
        try:
            await rounds.on_change(self.changed, "tokens", self.round_once, retry=RETRY_SECONDS)
        finally:
            for informer in (self._accounts, self._secrets):
                with contextlib.suppress(asyncio.CancelledError):
                    await informer.stop()

    async def round_once(self) -> bool:
        """Fill in or delete every token Secret that needs it; whether all went."""
        await self._accounts.wait_for_cache_sync()
        await self._secrets.wait_for_cache_sync()
        settled = True
        for secret in self._secrets.indexer.list():
            if secret.get("type") != SERVICE_ACCOUNT_TOKEN:
                continue
            try:
                settled &= await self._sync(secret)
            except StatusError as e:
                if e.reason not in ("NotFound", "Conflict"):  # changed meanwhile: next round
                    log.warning("cannot sync token secret", secret=_key(secret), error=e.message)
                settled = False
        return settled

    async def _account(self, namespace: str, name: str) -> Obj | None:
        """The account, from the informer, else read live (one made a moment ago)."""
        found = self._accounts.indexer.get_by_key(f"{namespace}/{name}")
        if found is not None:
            return found
        try:
            read = await self._accounts_store.get(namespace, name, "", Rendering())
        except StatusError as e:
            if e.reason == "NotFound":
                return None
            raise
        account: Obj = orjson.loads(read)
        return account

    async def _sync(self, secret: Obj) -> bool:
        metadata = secret["metadata"]
        if metadata.get("deletionTimestamp"):
            return True
        namespace, name = metadata["namespace"], metadata["name"]
        annotations = metadata.get("annotations") or {}
        wanted_uid = annotations.get(SERVICE_ACCOUNT_UID_KEY, "")
        account = await self._account(namespace, annotations.get(SERVICE_ACCOUNT_NAME_KEY, ""))
        uid = (account or {}).get("metadata", {}).get("uid", "")
        if account is None or (wanted_uid and wanted_uid != uid):
            await self._secrets_store.deletion(
                namespace, name, Preconditions(uid=metadata.get("uid", ""))
            )
            log.info("deleted token secret of a missing serviceaccount", secret=_key(secret))
            return True
        return await self._fill(secret, (account["metadata"]["name"], uid))

    def _ca(self) -> bytes | None:
        if self._root_ca is None:
            return None
        try:
            return self._root_ca.read_bytes()
        except FileNotFoundError:
            return None

    async def _fill(self, secret: Obj, account: tuple[str, str]) -> bool:
        """Write what the Secret lacks; whether it has everything now."""
        metadata = secret["metadata"]
        namespace, name = metadata["namespace"], metadata["name"]
        data = dict(secret.get("data") or {})
        annotations = dict(metadata.get("annotations") or {})
        ca = self._ca()
        # Settled unless a CA is to come: then the next rounds try again.
        settled = ca is not None or self._root_ca is None
        wanted = {
            "token": lambda: _b64(self._signer.legacy_token(namespace, account, name).encode()),
            "namespace": lambda: _b64(namespace.encode()),
        }
        if ca is not None:
            wanted["ca.crt"] = lambda: _b64(ca)
        missing = [key for key in wanted if not data.get(key)]
        if not missing and annotations.get(SERVICE_ACCOUNT_UID_KEY) == account[1]:
            return settled
        for key in missing:
            data[key] = wanted[key]()
        annotations[SERVICE_ACCOUNT_UID_KEY] = account[1]
        updated = {**secret, "data": data, "metadata": {**metadata, "annotations": annotations}}
        await self._secrets_store.update(namespace, name, orjson.dumps(updated))
        log.info("filled in token secret", secret=_key(secret), keys=missing)
        return settled


def _key(secret: Obj) -> str:
    return f"{secret['metadata'].get('namespace')}/{secret['metadata'].get('name')}"
