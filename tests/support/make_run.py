"""A user's side of `make run`, for the tests that run the README as written:
`make run` in its own process group (stopped as Ctrl-C stops it), the shell a
user types the README's lines into, a `-w` watch left running in the
background as in a second terminal, and checks of what kubectl printed
(exact text, or kubectl's tables cell by cell)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class MakeRun:
    """`make run` in its own process group, and what it printed."""

    process: subprocess.Popen[str]
    home: Path
    port: int
    output: list[str] = field(default_factory=list)
    up: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            # Up once it has said so and where the kubeconfig is (whatever
            # else it prints on the way).
            if line.strip().startswith("export KUBECONFIG=") and any(
                seen.startswith("strata is up") for seen in self.output
            ):
                self.up.set()
        self.up.set()  # ended: whoever waits sees the output

    def stop(self, sig: int = signal.SIGTERM, within: float = 30.0) -> bool:
        """sig to the whole group (make, strata.dev, etcd, the services), as
        Ctrl-C reaches a terminal's foreground group; whether it emptied in time."""
        with_pgid = self.process.pid
        try:
            os.killpg(with_pgid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            try:
                os.killpg(with_pgid, 0)
            except ProcessLookupError:
                self.process.wait()
                self.reader.join(10)
                return True
            self.process.poll()  # reap make, so the group can empty
            time.sleep(0.1)
        os.killpg(with_pgid, signal.SIGKILL)
        self.process.wait()
        self.reader.join(10)
        return False


@dataclass
class Terminal:
    """The user's shell at the repository root, with what earlier lines exported."""

    cwd: Path
    env: dict[str, str]

    def run(self, command: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def export(self, command: str) -> None:
        """`export NAME=VALUE`, as bash would set it (relative paths stay relative)."""
        words = shlex.split(command)
        assert words[0] == "export" and len(words) == 2, command
        name, value = words[1].split("=", 1)
        self.env[name] = value


Check = Callable[[subprocess.CompletedProcess[str]], None]
AGE = r"\d+s"


def prints(expected: str) -> Check:
    def check(result: subprocess.CompletedProcess[str]) -> None:
        assert (result.returncode, result.stdout, result.stderr) == (0, expected, ""), result

    return check


def tables(*expected: tuple[list[str], list[list[str]]]) -> Check:
    """kubectl's tables (blank-line separated): exact headers, each cell a regex."""

    def check(result: subprocess.CompletedProcess[str]) -> None:
        assert (result.returncode, result.stderr) == (0, ""), result
        printed = [t for t in result.stdout.split("\n\n") if t.strip()]
        assert len(printed) == len(expected), result.stdout
        for text, (headers, rows) in zip(printed, expected, strict=True):
            lines = [re.split(r" {2,}", line.rstrip()) for line in text.strip("\n").split("\n")]
            assert lines[0] == headers, text
            assert len(lines[1:]) == len(rows), text
            for got, want in zip(lines[1:], rows, strict=True):
                assert len(got) == len(want), text
                assert all(re.fullmatch(w, g) for g, w in zip(got, want, strict=True)), text

    return check


def watch_documents(text: str) -> list[dict[str, Any]]:
    decoder, index, documents = json.JSONDecoder(), 0, []
    while (index := len(text) - len(text[index:].lstrip())) < len(text):
        document, index = decoder.raw_decode(text, index)
        documents.append(document)
    return documents


@dataclass
class Watch:
    """A `-w` line running in the background, and the first line it printed."""

    process: subprocess.Popen[str]
    first: str

    def events(self) -> list[tuple[str, str, dict[str, str]]]:
        """Stopped (after a second for the block's last event to arrive): the
        (type, name, data) of each event it printed."""
        time.sleep(1)
        os.killpg(self.process.pid, signal.SIGTERM)
        rest, errors = self.process.communicate(timeout=10)
        assert errors == "", errors
        return [
            (d["type"], d["object"]["metadata"]["name"], d["object"]["data"])
            for d in watch_documents(self.first + rest)
        ]

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.communicate(timeout=10)  # reaped, its pipes closed


def start_watch(terminal: Terminal, command: str) -> Watch:
    """A `-w` line: it never ends by itself, so it runs in the background (as in
    a second terminal) until the block is through; the first event it prints
    (the list's ADDED) says it is watching."""
    watch = subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=terminal.cwd,
        env=terminal.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert watch.stdout is not None
    first = watch.stdout.readline()
    assert first.startswith("{"), (first, watch.poll())
    return Watch(watch, first)
