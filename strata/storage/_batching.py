"""Gathering queued messages into size-capped batches: how both ends of the
storage Pipeline turn many small messages into few gRPC messages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

# Messages gathered into one batch, at most (one larger message goes alone).
BATCH_BYTES = 4 * 1024 * 1024

M = TypeVar("M")


async def batches(
    queue: asyncio.Queue[M | None], size_of: Callable[[M], int]
) -> AsyncIterator[list[M]]:
    """Lists of whatever is queued, waiting only for the first of each; ends at None."""
    held: M | None = None
    while (first := held or await queue.get()) is not None:
        held = None
        batch, size = [first], size_of(first)
        while not queue.empty() and size < BATCH_BYTES:
            item = queue.get_nowait()
            if item is None:
                yield batch
                return
            item_size = size_of(item)
            if size + item_size > BATCH_BYTES:
                held = item  # goes first in the next batch
                break
            batch.append(item)
            size += item_size
        yield batch
