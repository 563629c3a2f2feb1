"""What is wrong with a configuration file the gateway reads (the structured
authentication and authorization configurations), in kube's words: each
problem a field.Error ("authorizers[0].timeout: Required value"), all of
them kube's aggregate of them ("[a, b]", or the one alone)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson


def _shown(value: Any) -> str:
    """A value as field.Error writes it: a string quoted, anything else as JSON."""
    return orjson.dumps(value).decode()


class Problems:
    def __init__(self) -> None:
        self.found: list[str] = []

    def required(self, path: str, detail: str = "") -> None:
        self.found.append(f"{path}: Required value" + (f": {detail}" if detail else ""))

    def invalid(self, path: str, value: Any, detail: str) -> None:
        self.found.append(f"{path}: Invalid value: {_shown(value)}: {detail}")

    def unsupported(self, path: str, value: Any, supported: Iterable[str]) -> None:
        listed = ", ".join(f'"{s}"' for s in supported)
        self.found.append(f"{path}: Unsupported value: {_shown(value)}: supported values: {listed}")

    def duplicate(self, path: str, value: Any) -> None:
        self.found.append(f"{path}: Duplicate value: {_shown(value)}")

    def too_many(self, path: str, count: int, most: int) -> None:
        self.found.append(f"{path}: Too many: {count}: must have at most {most} items")

    def aggregate(self) -> str:
        """kube's utilerrors aggregate of what was found."""
        if len(self.found) == 1:
            return self.found[0]
        return "[" + ", ".join(self.found) + "]"
