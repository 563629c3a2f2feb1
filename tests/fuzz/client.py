"""Sending the fuzzer's requests and judging each answer: over keep-alive
HTTPS connections (one per thread), every answer within a bound, never a 5xx,
and every error a kube Status whose code is the HTTP status. A watch's stream
is read to its end by a pool of its own, so that a run of thousands of
requests does not wait on watches one by one: one that asked to end within a
second and goes on is a hang like any other."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import yaml

# No answer may take longer (kube answers a bad request at once; a write,
# etcd and all, in well under this on a loaded machine).
ANSWER_WITHIN = 10.0
# How long past its timeoutSeconds a watch may take to end.
WATCH_SLACK = 5.0
# How long a watch that may stay open is read before the client leaves.
WATCH_SAMPLE = 1.5
WATCH_EVENTS = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"}
# What kube answers a path outside what it serves (Go's http.NotFound): an
# /apis/<group>/... of a group not served, as a CRD's is until established.
GO_NOT_FOUND = b"404 page not found\n"
TOO_LARGE = "ResourceVersionTooLarge"


@dataclass(frozen=True, kw_only=True)
class Request:
    method: str
    target: str  # path and query, encoded
    headers: dict[str, str]
    body: bytes | None
    watch: bool  # asks for a watch (?watch= or a /watch/ path)
    # A watch's timeoutSeconds when it is a small positive number: it must end.
    ends_within: float | None = None

    def describe(self) -> str:
        body = "" if self.body is None else f"\n  body {self.body[:600]!r}"
        return f"{self.method.upper()} {self.target}\n  headers {self.headers}{body}"


@dataclass(frozen=True, kw_only=True)
class Answer:
    status: int
    content_type: str
    body: bytes
    seconds: float

    def describe(self) -> str:
        return (
            f"answer {self.status} ({self.seconds:.2f} s) {self.content_type}: {self.body[:600]!r}"
        )


class Violation(AssertionError):
    """An answer that breaks one of the rules, with the request that got it."""

    def __init__(self, rule: str, request: Request, answer: Answer | None = None) -> None:
        said = answer.describe() if answer is not None else "no answer"
        super().__init__(f"{rule}\n  {request.describe()}\n  {said}")


def parsed(content_type: str, body: bytes) -> Any:
    """A body as its content type says, else ValueError."""
    kind = content_type.split(";")[0].strip()
    if kind == "application/json":
        return json.loads(body)
    if kind == "application/yaml":
        try:
            return yaml.safe_load(body)
        except yaml.YAMLError as e:
            raise ValueError(str(e)) from None
    raise ValueError(f"a body of {content_type!r}")


def check(request: Request, answer: Answer) -> None:
    """The rules every answer keeps; raises a Violation."""
    if answer.status >= 500:
        raise Violation("a 5xx", request, answer)
    if answer.seconds > ANSWER_WITHIN:
        raise Violation(f"an answer slower than {ANSWER_WITHIN} s", request, answer)
    if answer.status < 400 and not answer.body:
        return
    if answer.status == 404 and answer.body == GO_NOT_FOUND:
        return
    try:
        body = parsed(answer.content_type, answer.body)
    except ValueError as e:
        raise Violation(f"a body its content type does not read ({e})", request, answer) from None
    if answer.status >= 400 and not (
        isinstance(body, dict)
        and body.get("kind") == "Status"
        and body.get("code") == answer.status
    ):
        raise Violation("an error that is no Status of its code", request, answer)


def too_large(answer: Answer) -> bool:
    """Whether answer is kube's 504 for a resourceVersion not reached yet."""
    if answer.status != 504:
        return False
    try:
        body = parsed(answer.content_type, answer.body)
    except ValueError:
        return False
    if not isinstance(body, dict):
        return False
    causes = (body.get("details") or {}).get("causes") or [{}]
    return bool(body.get("reason") == "Timeout" and causes[0].get("reason") == TOO_LARGE)


def _event(event: Any) -> bool:
    """Whether a watch's line is an event (an ERROR's object a Status)."""
    if not isinstance(event, dict) or event.get("type") not in WATCH_EVENTS:
        return False
    obj = event.get("object")
    return isinstance(obj, dict) and (event["type"] != "ERROR" or obj.get("kind") == "Status")


def first_value(target: str, key: str) -> str | None:
    """The first value of key in target's query, as the server reads it."""
    query = urlsplit(target).query
    return next((v for k, v in parse_qsl(query, keep_blank_values=True) if k == key), None)


@dataclass
class Tally:
    """What the run sent and got, from every thread."""

    requests: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    watches: int = 0
    violations: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, status: int, watch: bool) -> None:
        with self.lock:
            self.requests += 1
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.watches += watch


class Gateway:
    """HTTPS to one gateway as one user, a keep-alive connection per thread."""

    def __init__(self, base: str, token: str, cafile: str) -> None:
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 443
        self.token = token
        self.context = ssl.create_default_context(cafile=cafile)
        self.local = threading.local()
        self.tally = Tally()
        self.readers = ThreadPoolExecutor(max_workers=24, thread_name_prefix="fuzz-watch")
        self.pending: list[Any] = []
        self.opened: list[http.client.HTTPSConnection] = []

    def _connection(self) -> http.client.HTTPSConnection:
        connection: http.client.HTTPSConnection | None = getattr(self.local, "connection", None)
        if connection is None:
            connection = http.client.HTTPSConnection(
                self.host, self.port, context=self.context, timeout=ANSWER_WITHIN + 1
            )
            self.local.connection = connection
            self.opened.append(connection)
        return connection

    def _drop(self) -> None:
        connection = getattr(self.local, "connection", None)
        if connection is not None:
            connection.close()
        self.local.connection = None

    def _response(self, request: Request) -> http.client.HTTPResponse:
        """The answer's head; a keep-alive connection the server had closed
        is opened again once (nothing was sent on it)."""
        headers = {"Authorization": f"Bearer {self.token}", **request.headers}
        for attempt in (1, 2):
            connection = self._connection()
            reused = connection.sock is not None
            try:
                connection.request(request.method.upper(), request.target, request.body, headers)
                return connection.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self._drop()
                if attempt == 2 or not reused:
                    raise
        raise AssertionError("unreachable")

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """A request of the run's own (seeding, victims), judged as any other
        but not counted: its status and its JSON."""
        data = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"Content-Type": "application/json"}
        request = Request(method=method, target=path, headers=headers, body=data, watch=False)
        answer = self.exchange(request, counted=False)
        try:
            return answer.status, parsed(answer.content_type, answer.body)
        except ValueError:  # no body, or Go's plain 404
            return answer.status, None

    def exchange(self, request: Request, *, counted: bool = True) -> Answer:
        """Send request and judge its answer (a watch's stream later, by the
        readers); raises a Violation."""
        started = time.monotonic()
        try:
            response = self._response(request)
            content_type = response.getheader("Content-Type", "")
            streaming = request.watch and response.status == 200
            body = b"" if streaming else response.read()
        except (OSError, http.client.HTTPException) as e:
            self._drop()
            raise Violation(f"no answer: {e!r}", request) from None
        answer = Answer(
            status=response.status,
            content_type=content_type,
            body=body,
            seconds=time.monotonic() - started,
        )
        if counted:
            self.tally.add(answer.status, request.watch)
        if streaming:
            connection = self.local.connection
            self.local.connection = None
            self.pending.append(
                self.readers.submit(
                    self._read_watch, request, answer, response, connection, started
                )
            )
            check(request, answer)
            return answer
        if response.getheader("Connection", "").lower() == "close":
            self._drop()
        if too_large(answer):
            self._check_too_large(request, answer)
        else:
            check(request, answer)
        return answer

    def _check_too_large(self, request: Request, answer: Answer) -> None:
        """kube's 504 for a resourceVersion the cache has not reached in 3 s
        (etcd had not either: kube asks etcd for progress while it waits, and
        answers as soon as the cache has caught up)."""
        asked = first_value(request.target, "resourceVersion")
        _, listed = self.call("GET", "/api/v1/namespaces?limit=1")
        current = int(listed["metadata"]["resourceVersion"])
        if asked is None or not asked.isdigit() or int(asked) <= current:
            raise Violation(f"a 504 though etcd is at {current}", request, answer)

    def _read_watch(
        self,
        request: Request,
        head: Answer,
        response: http.client.HTTPResponse,
        connection: http.client.HTTPSConnection,
        started: float,
    ) -> None:
        """Read a watch's events until it ends; note what breaks the rules."""
        limit = (request.ends_within or 0) + WATCH_SLACK
        deadline = started + (limit if request.ends_within else WATCH_SAMPLE)
        try:
            while (left := deadline - time.monotonic()) > 0:
                if connection.sock is not None:
                    connection.sock.settimeout(left)
                line = response.readline()
                if not line:
                    return
                if not _event(json.loads(line)):
                    raise ValueError(f"an event that is none: {line[:300]!r}")
            if request.ends_within:
                self._note(f"a watch open past its timeoutSeconds + {WATCH_SLACK} s", request, head)
        except TimeoutError:
            if request.ends_within:
                self._note(f"a watch open past its timeoutSeconds + {WATCH_SLACK} s", request, head)
        except (OSError, http.client.HTTPException, ValueError) as e:
            self._note(f"a broken watch stream: {e!r}", request, head)
        finally:
            connection.close()

    def _note(self, rule: str, request: Request, head: Answer) -> None:
        with self.tally.lock:
            self.tally.violations.append(str(Violation(rule, request, head)))

    def close(self) -> None:
        self.readers.shutdown(wait=True)
        for connection in self.opened:
            connection.close()

    def finish_watches(self) -> list[str]:
        """Wait for every watch read; what broke the rules."""
        for future in self.pending:
            future.result()
        self.readers.shutdown(wait=True)
        return self.tally.violations
