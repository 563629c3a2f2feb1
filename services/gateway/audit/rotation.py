"""The audit log file and its rotation, as kube's log backend keeps it (the
lumberjack logger behind --audit-log-maxsize, --audit-log-maxbackup and
--audit-log-maxage): a file past its size is renamed to
<name>-<UTC time>.<ext> and a new one begun, and the oldest of the renamed
files are removed past the count or age kept. Used only from the log's
writer thread, so its blocking file calls never hold up the event loop."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Protocol

MEGABYTE = 1024 * 1024
_DAY_SECONDS = 24 * 60 * 60
# lumberjack's backup time: Go's "2006-01-02T15-04-05.000", in UTC.
_BACKUP_TIME = "%Y-%m-%dT%H-%M-%S.%f"
_BACKUP_TIME_LENGTH = len("2006-01-02T15-04-05.000")


class Sink(Protocol):
    def write_lines(self, lines: Sequence[bytes]) -> None: ...

    def close(self) -> None: ...


class Stdout:
    """--audit-log-path=-: the lines on standard output, never rotated."""

    def __init__(self, stream: BinaryIO | None = None) -> None:
        self._stream = stream or sys.stdout.buffer

    def write_lines(self, lines: Sequence[bytes]) -> None:
        self._stream.write(b"".join(lines))
        self._stream.flush()

    def close(self) -> None:
        self._stream.flush()


class RotatingFile:
    """The log file: appended to, rotated past max_bytes (0: never), with at
    most max_backups old files (0: all) of at most max_age_days (0: any age)."""

    def __init__(
        self,
        path: Path,
        *,
        max_bytes: int,
        max_backups: int = 0,
        max_age_days: int = 0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self._max_bytes, self._max_backups, self._max_age = max_bytes, max_backups, max_age_days
        self._clock = clock
        self._file: BinaryIO | None = None
        self._size = 0

    def open(self) -> None:
        """Open (or create, readable by its owner only) the file to append to;
        called at start, so that a path that cannot be written stops the
        gateway as it stops kube."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._file = os.fdopen(descriptor, "ab")
        self._size = os.fstat(descriptor).st_size
        self._remove_old()

    def write_lines(self, lines: Sequence[bytes]) -> None:
        """Each line whole in one file: a line that would take the file past
        its size goes to a new one."""
        if self._file is None:
            self.open()
        chunk: list[bytes] = []
        size = self._size
        for line in lines:
            if self._max_bytes and size and size + len(line) > self._max_bytes:
                self._write(chunk)
                chunk = []
                self._rotate()
                size = 0
            chunk.append(line)
            size += len(line)
        self._write(chunk)

    def _write(self, chunk: list[bytes]) -> None:
        if not chunk or self._file is None:
            return
        data = b"".join(chunk)
        self._file.write(data)
        self._file.flush()
        self._size += len(data)

    def _backup_path(self) -> Path:
        stamp = datetime.fromtimestamp(self._clock(), UTC).strftime(_BACKUP_TIME)[:-3]
        return self.path.with_name(f"{self.path.stem}-{stamp}{self.path.suffix}")

    def _rotate(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        mode = self.path.stat().st_mode & 0o777
        self.path.rename(self._backup_path())
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, mode)
        self._file = os.fdopen(descriptor, "ab")
        self._size = 0
        self._remove_old()

    def backups(self) -> list[tuple[float, Path]]:
        """The rotated files, newest first, with the times their names give."""
        prefix, suffix = f"{self.path.stem}-", self.path.suffix
        found = []
        for entry in self.path.parent.iterdir():
            name = entry.name
            if not (name.startswith(prefix) and name.endswith(suffix)) or entry == self.path:
                continue
            stamp = name[len(prefix) : len(name) - len(suffix)]
            if len(stamp) != _BACKUP_TIME_LENGTH:
                continue
            try:
                when = datetime.strptime(stamp + "000", _BACKUP_TIME).replace(tzinfo=UTC)
            except ValueError:
                continue
            found.append((when.timestamp(), entry))
        return sorted(found, reverse=True)

    def _remove_old(self) -> None:
        old = self.backups()
        doomed = old[self._max_backups :] if self._max_backups else []
        if self._max_age:
            cutoff = self._clock() - self._max_age * _DAY_SECONDS
            doomed += [(when, p) for when, p in old if when < cutoff and (when, p) not in doomed]
        for _, path in doomed:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
