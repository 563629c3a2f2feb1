"""The storage conformance suite: ordinary code that checks any implementation
of the storage contract (kube's pkg/storage/testing, for strata).

`CASES` maps each case's name to an async function taking a `Suite`: the
implementation under test, what it can do (`Capabilities`) and out-of-band
hooks (`Hooks`). Test runners (pytest here) call every case against every
implementation; a case an implementation cannot run says which capability
is missing via `Suite.require`.
"""

from strata.storage.conformance._cases import CASES
from strata.storage.conformance._suite import Capabilities, Hooks, MissingCapability, Suite

__all__ = ["CASES", "Capabilities", "Hooks", "MissingCapability", "Suite"]
