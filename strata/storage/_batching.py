"""Gathering queued messages into size-capped batches: how both ends of the
storage Pipeline turn many small messages into few gRPC messages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Protocol, TypeVar

# Messages gathered into one batch, at most (one larger message goes alone).
BATCH_BYTES = 4 * 1024 * 1024


class _Sized(Protocol):
    def ByteSize(self) -> int: ...


M = TypeVar("M", bound=_Sized)


async def batches(queue: asyncio.Queue[M | None]) -> AsyncIterator[list[M]]:
    """Lists of whatever is queued, waiting only for the first of each; ends at None."""
    held: M | None = None
    while (first := held or await queue.get()) is not None:
        held = None
        batch, size = [first], first.ByteSize()
        while not queue.empty() and size < BATCH_BYTES:
            item = queue.get_nowait()
            if item is None:
                yield batch
                return
            item_size = item.ByteSize()
            if size + item_size > BATCH_BYTES:
                held = item  # goes first in the next batch
                break
            batch.append(item)
            size += item_size
        yield batch
