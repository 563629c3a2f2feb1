"""The load and the witness of the fault suite (tests/faults): writers that
create ConfigMaps as fast as the system acknowledges them, remembering each
acknowledged one, and a watcher that follows the namespace as client-go's
reflector does (resume from the last resourceVersion; on 410, list again) and
remembers each object it saw and whether any came twice or out of order."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

# Each request's deadline: a write that takes longer is not acknowledged.
REQUEST_SECONDS = 5.0


class Api:
    """One keep-alive HTTPS connection to the gateway, made again after a failure."""

    def __init__(self, url: str, token: str, ca_file: str) -> None:
        parts = urlsplit(url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 443
        self._context = ssl.create_default_context(cafile=ca_file)
        self._headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self._connection: http.client.HTTPSConnection | None = None

    def connection(self, timeout: float = REQUEST_SECONDS) -> http.client.HTTPSConnection:
        if self._connection is None:
            self._connection = http.client.HTTPSConnection(
                self._host, self._port, context=self._context, timeout=timeout
            )
        return self._connection

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """(status, decoded JSON body); (0, error) when the request failed."""
        try:
            connection = self.connection()
            payload = None if body is None else json.dumps(body)
            connection.request(method, path, payload, self._headers)
            response = connection.getresponse()
            data = response.read()
            if response.getheader("Connection", "").lower() == "close":
                self.close()
            return response.status, json.loads(data) if data else None
        except (OSError, http.client.HTTPException, ValueError) as e:
            self.close()
            return 0, repr(e)

    def stream(self, path: str, timeout: float) -> http.client.HTTPResponse:
        """A watch's response, read line by line by the caller."""
        self.close()
        connection = self.connection(timeout)
        connection.request("GET", path, None, self._headers)
        return connection.getresponse()


@dataclass
class Writers:
    """Threads that create ConfigMaps in namespace until stopped."""

    api: tuple[str, str, str]
    namespace: str
    count: int = 2
    acknowledged: dict[str, int] = field(default_factory=dict)  # name -> resourceVersion
    # When the newest acknowledged write was sent (monotonic seconds).
    last_ack: float = 0.0
    failures: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        for n in range(self.count):
            thread = threading.Thread(target=self._write, args=(n,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(REQUEST_SECONDS * 3)

    def _write(self, n: int) -> None:
        api = Api(*self.api)
        path = f"/api/v1/namespaces/{self.namespace}/configmaps"
        i = 0
        while not self._stop.is_set():
            i += 1
            name = f"w{n}-{i}"
            body = {"metadata": {"name": name}, "data": {"n": str(i)}}
            sent = time.monotonic()
            status, answer = api.request("POST", path, body)
            with self._lock:
                if status == 201:
                    self.acknowledged[name] = int(answer["metadata"]["resourceVersion"])
                    self.last_ack = max(self.last_ack, sent)
                else:
                    self.failures += 1
            if status != 201:
                time.sleep(0.1)  # a dependency is away: do not spin
        api.close()

    def acknowledged_since(self, moment: float) -> bool:
        """Whether a write sent after moment has been acknowledged."""
        with self._lock:
            return self.last_ack > moment


@dataclass
class Watcher:
    """A reflector's view of namespace's ConfigMaps, kept by one thread."""

    api: tuple[str, str, str]
    namespace: str
    seen: dict[str, int] = field(default_factory=dict)  # name -> resourceVersion
    duplicates: list[str] = field(default_factory=list)
    out_of_order: list[tuple[int, int]] = field(default_factory=list)
    relists: int = 0
    resumes: int = 0
    # Where the next watch starts: the last event's resourceVersion (None: list).
    rv: int | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _list(self, api: Api) -> int | None:
        status, answer = api.request("GET", f"/api/v1/namespaces/{self.namespace}/configmaps")
        if status != 200:
            return None
        # A list replaces what the watcher knew: only a watch can see twice.
        for item in answer["items"]:
            self.seen[item["metadata"]["name"]] = int(item["metadata"]["resourceVersion"])
        return int(answer["metadata"]["resourceVersion"])

    def _saw(self, metadata: dict[str, Any]) -> None:
        name, rv = metadata["name"], int(metadata["resourceVersion"])
        if name in self.seen:
            self.duplicates.append(name)
        self.seen[name] = rv

    def _run(self) -> None:
        api = Api(*self.api)
        while not self._stop.is_set():
            if self.rv is None:
                self.rv = self._list(api)
                if self.rv is None:
                    time.sleep(0.2)
                    continue
                self.relists += 1
            try:
                self._watch(api, self.rv)
            except (OSError, http.client.HTTPException, ValueError):
                # Broken mid-stream: resumed from the last event it gave.
                api.close()
                time.sleep(0.2)
            self.resumes += 1
        api.close()

    def _watch(self, api: Api, rv: int) -> None:
        """Events from rv until the watch ends, each moving self.rv on (to
        None when only a new list will do: 410)."""
        path = (
            f"/api/v1/namespaces/{self.namespace}/configmaps?watch=1&resourceVersion={rv}"
            "&allowWatchBookmarks=true&timeoutSeconds=20"
        )
        response = api.stream(path, timeout=REQUEST_SECONDS * 2)
        if response.status == 410:
            self.rv = None
            return
        if response.status != 200:
            response.read()
            time.sleep(0.2)
            return
        while not self._stop.is_set() and (line := response.readline()):
            event = json.loads(line)
            if event["type"] == "ERROR":
                if event["object"].get("code") == 410:
                    self.rv = None
                return
            metadata = event["object"]["metadata"]
            new = int(metadata["resourceVersion"])
            # A bookmark may repeat the last event's resourceVersion; events rise.
            if new < rv or (new == rv and event["type"] != "BOOKMARK"):
                self.out_of_order.append((rv, new))
            rv = self.rv = new
            if event["type"] == "ADDED":
                self._saw(metadata)
