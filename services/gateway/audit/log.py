"""The audit log backend: events go into a bounded queue and a writer thread
encodes and writes them, so a request never waits on the disk and the event
loop never blocks on a write.

This is kube's log backend in its batch mode (--audit-log-mode=batch, with
--audit-log-batch-buffer-size): when the queue is full the event is dropped
and counted (apiserver_audit_error_total{plugin="buffered"}), where kube's
default blocking mode would make the request wait for the write. The thread
writes whatever has queued up in one go, so events reach the file within a
write's time rather than after kube's batch wait."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from services.gateway.audit import events
from services.gateway.audit.rotation import Sink
from strata import telemetry

log = telemetry.get_logger("strata.gateway.audit")

# kube's --audit-log-batch-buffer-size default.
BUFFER_SIZE = 10000
# Events written at once at most: a bound on a line list's memory.
_MAX_BATCH = 1000
_STOP = object()


class LogBackend:
    """Events in, JSON lines out through sink, in a thread of its own.
    failed(plugin, count) is told of events lost: "buffered" for a full
    queue (on the event loop), "log" for ones that could not be written."""

    def __init__(
        self,
        sink: Sink,
        *,
        buffer_size: int = BUFFER_SIZE,
        failed: Callable[[str, int], None] = lambda _plugin, _count: None,
    ) -> None:
        self._sink = sink
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=buffer_size)
        self._failed = failed
        self._thread = threading.Thread(target=self._run, name="audit log", daemon=True)
        self._started = False

    def start(self) -> None:
        if not self._started:
            self._started = True
            self._thread.start()

    def process(self, event: events.Obj, omit_managed_fields: bool) -> bool:
        """Queue event for writing; False (and the event lost) if the queue is
        full. Never blocks."""
        try:
            self._queue.put_nowait((event, omit_managed_fields))
        except queue.Full:
            self._failed("buffered", 1)
            return False
        return True

    def close(self) -> None:
        """Write what is queued and stop (blocks: run it off the event loop)."""
        if self._started:
            self._queue.put(_STOP)
            self._thread.join()
            self._started = False
        self._sink.close()

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < _MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stopping = any(item is _STOP for item in batch)
            self._write([item for item in batch if item is not _STOP])
            if stopping:
                return

    def _write(self, batch: list[tuple[events.Obj, bool]]) -> None:
        lines = []
        for event, omit_managed_fields in batch:
            try:
                lines.append(events.encode(event, omit_managed_fields))
            except (TypeError, ValueError) as e:  # an object that is not JSON after all
                log.error("audit event not encoded", error=str(e))
                self._failed("log", 1)
        if not lines:
            return
        try:
            self._sink.write_lines(lines)
        except OSError as e:
            log.error("audit events not written", error=str(e), events=len(lines))
            self._failed("log", len(lines))
