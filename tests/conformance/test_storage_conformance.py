"""Every conformance case against the storage service and the cacher, each
over real gRPC on a real etcd."""

from __future__ import annotations

import pytest

from strata.etcd import Etcd
from strata.storage import GrpcStorage
from strata.storage.conformance import CASES, Capabilities, Hooks, MissingCapability, Suite

CAPABILITIES = {
    "storage": Capabilities(),
    "storage-unary": Capabilities(),
    # The cacher, like kube's, answers a watch from its window (compacted or not)
    # and 410 for anything older, whatever etcd still keeps.
    "cacher": Capabilities(
        watch_expires_on_compaction=False, expires_before_window=True, progress_on_request=False
    ),
}


@pytest.fixture(scope="session")
def suite(store: GrpcStorage, etcd: Etcd, implementation: str) -> Suite:
    async def compact(revision: int) -> None:
        await etcd.compact(revision)

    async def current_revision() -> int:
        return (await etcd.range(b"/", count_only=True)).header.revision

    return Suite(
        storage=store,
        capabilities=CAPABILITIES[implementation],
        hooks=Hooks(compact=compact, current_revision=current_revision),
        name=f"the {implementation}",
    )


@pytest.mark.parametrize("name", sorted(CASES))
async def test_conformance(suite: Suite, name: str) -> None:
    try:
        await CASES[name](suite)
    except MissingCapability as e:
        pytest.skip(f"capability missing: {e}")
