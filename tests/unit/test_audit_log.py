"""The audit log backend: an event's line as kube writes it, the writer
thread that keeps writes off the event loop (a full queue drops and counts
rather than waits), and the file's rotation by size, count and age as kube's
lumberjack logger rotates it."""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson

from services.gateway.audit import events
from services.gateway.audit.log import LogBackend
from services.gateway.audit.rotation import RotatingFile, Stdout

# 2026-01-02T03:04:05.678901Z
WHEN = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC).timestamp()


def _event(**fields: object) -> events.Obj:
    return {
        **events.HEAD,
        "level": "RequestResponse",
        "requestURI": "/api/v1/configmaps?watch=1&x=<y>",
        **fields,
        "requestReceivedTimestamp": WHEN,
        "stageTimestamp": WHEN + 1,
    }


def test_a_line_is_kubes_json() -> None:
    body = b'{"kind":"ConfigMap","metadata":{"name":"c","managedFields":[{"manager":"m"}]}}\n'
    line = events.encode(_event(requestObject={"kind": "ConfigMap"}, responseObject=body), False)
    assert line.endswith(b"}\n") and line.count(b"\n") == 1
    assert b'"requestURI":"/api/v1/configmaps?watch=1\\u0026x=\\u003cy\\u003e"' in line
    event = orjson.loads(line)
    assert event["requestReceivedTimestamp"] == "2026-01-02T03:04:05.678901Z"
    assert event["stageTimestamp"] == "2026-01-02T03:04:06.678901Z"
    assert event["responseObject"]["metadata"]["managedFields"] == [{"manager": "m"}]
    assert list(event)[-2:] == ["requestReceivedTimestamp", "stageTimestamp"]


def test_managed_fields_left_out_of_objects_and_list_items() -> None:
    listed = {"kind": "List", "items": [{"metadata": {"name": "a", "managedFields": []}}]}
    request = {"metadata": {"name": "b", "managedFields": [{}]}}
    event = _event(requestObject=request, responseObject=orjson.dumps(listed))
    written = orjson.loads(events.encode(event, True))
    assert written["requestObject"] == {"metadata": {"name": "b"}}
    assert written["responseObject"]["items"] == [{"metadata": {"name": "a"}}]
    assert request["metadata"]["managedFields"] == [{}]  # another event may still write it


class Held:
    """A sink whose writes wait until released."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.release = threading.Event()
        self.writing = threading.Event()

    def write_lines(self, lines: Sequence[bytes]) -> None:
        self.writing.set()
        self.release.wait(10)
        self.lines.extend(lines)

    def close(self) -> None:
        pass


def test_a_full_queue_drops_and_counts_instead_of_waiting() -> None:
    sink = Held()
    failures: list[tuple[str, int]] = []
    backend = LogBackend(sink, buffer_size=2, failed=lambda p, n: failures.append((p, n)))
    backend.start()
    assert backend.process(_event(n=1), False)
    assert sink.writing.wait(10)  # the thread holds event 1 in its write
    assert backend.process(_event(n=2), False)
    assert backend.process(_event(n=3), False)
    assert not backend.process(_event(n=4), False)  # returns at once
    assert failures == [("buffered", 1)]
    sink.release.set()
    backend.close()
    assert [orjson.loads(line)["n"] for line in sink.lines] == [1, 2, 3]


def test_an_event_that_cannot_be_written_is_counted() -> None:
    class Broken:
        def write_lines(self, lines: Sequence[bytes]) -> None:
            raise OSError("disk full")

        def close(self) -> None:
            pass

    failures: list[tuple[str, int]] = []
    backend = LogBackend(Broken(), failed=lambda p, n: failures.append((p, n)))
    backend.start()
    backend.process(_event(), False)
    backend.close()
    assert failures == [("log", 1)]


def test_standard_output() -> None:
    out = io.BytesIO()
    Stdout(out).write_lines([b"a\n", b"b\n"])
    assert out.getvalue() == b"a\nb\n"


def test_the_file_is_its_owners_and_rotates_past_its_size(tmp_path: Path) -> None:
    now = [WHEN]
    path = tmp_path / "audit.log"
    log = RotatingFile(path, max_bytes=25, clock=lambda: now[0])
    log.open()
    assert os.stat(path).st_mode & 0o777 == 0o600
    log.write_lines([b"1" * 10 + b"\n", b"2" * 10 + b"\n"])
    log.write_lines([b"3" * 10 + b"\n"])  # would pass 25 bytes: a new file
    log.close()
    backup = tmp_path / "audit-2026-01-02T03-04-05.678.log"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "audit-2026-01-02T03-04-05.678.log",
        "audit.log",
    ]
    assert backup.read_bytes() == b"1" * 10 + b"\n" + b"2" * 10 + b"\n"
    assert path.read_bytes() == b"3" * 10 + b"\n"
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_old_files_past_the_count_or_age_are_removed(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    day = 24 * 60 * 60.0
    for stamp in ("2025-12-01T00-00-00.000", "2025-12-31T00-00-00.000", "2026-01-01T00-00-00.000"):
        (tmp_path / f"audit-{stamp}.log").write_text("old\n")
    (tmp_path / "audit-notatime.log").write_text("kept: not a backup's name\n")
    now = [WHEN]
    log = RotatingFile(path, max_bytes=5, max_backups=2, max_age_days=10, clock=lambda: now[0])
    log.open()  # past ten days: 2025-12-01's
    assert not (tmp_path / "audit-2025-12-01T00-00-00.000.log").exists()
    log.write_lines([b"abcd\n"])
    now[0] += day
    log.write_lines([b"efgh\n"])  # a rotation: three backups, the oldest goes
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "audit-2026-01-01T00-00-00.000.log",
        "audit-2026-01-03T03-04-05.678.log",
        "audit-notatime.log",
        "audit.log",
    ]
