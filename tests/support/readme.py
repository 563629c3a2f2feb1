"""The README's shell blocks, as a test reads them: every ```sh block a user is
told to run is run by some test, in order, so a README change that breaks a
command breaks `make test`. This module only finds the blocks; the tests that
run them say which block they run by its heading and its first command."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"

_FENCE = re.compile(r"^```(\w*)\s*$")
_HEADING = re.compile(r"^(#+)\s+(.*?)\s*$")


@dataclass(frozen=True)
class ShellBlock:
    """One fenced ```sh block: the heading it sits under, where it starts, and
    its commands (comments after a command kept, as bash reads them)."""

    heading: str
    line: int
    text: str

    @property
    def commands(self) -> list[str]:
        return [
            line
            for line in self.text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]

    @property
    def key(self) -> str:
        """The block's name in test ids: its heading and its first command."""
        first = self.commands[0].split("#", 1)[0].strip() if self.commands else ""
        return f"{self.heading}: {first}"


def shell_blocks(path: Path = README) -> list[ShellBlock]:
    """Every ```sh (or ```bash, ```shell) block of the file, in order."""
    blocks: list[ShellBlock] = []
    heading = ""
    language: str | None = None
    start = 0
    body: list[str] = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        fence = _FENCE.match(line)
        if language is not None:
            if fence and not fence.group(1):
                if language in ("sh", "bash", "shell"):
                    blocks.append(ShellBlock(heading, start, "\n".join(body) + "\n"))
                language = None
            else:
                body.append(line)
            continue
        if fence:
            language, start, body = fence.group(1), number, []
        elif match := _HEADING.match(line):
            heading = match.group(2)
    return blocks


def shell_block(key: str, path: Path = README) -> ShellBlock:
    """The block a test runs, by its key; a block gone or renamed fails the test."""
    blocks = {b.key: b for b in shell_blocks(path)}
    assert key in blocks, f"README has no block {key!r} any more: {list(blocks)}"
    return blocks[key]


@dataclass(frozen=True)
class NotServed:
    """What the README's "Not served yet" list names: resources (and
    subresources) per API group ("" is core/v1), and whole groups."""

    resources: dict[str, frozenset[str]]
    groups: frozenset[str]


_NOT_SERVED = "**Not served yet**"
_CODE = re.compile(r"`([^`]+)`")
_ASIDE = re.compile(r"\([^()]*\)")


def not_served(path: Path = README) -> NotServed:
    """The bullets after the README's "**Not served yet**" paragraph. A bullet
    is `group/version`: then backticked resource names, or "Whole API groups:"
    then backticked group names; what follows " — " and what is in parentheses
    is explanation (commands, kinds), not names."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(_NOT_SERVED))
    bullets: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("- "):
            bullets.append(line[2:])
        elif bullets and line.startswith("  "):
            bullets[-1] += " " + line.strip()
        elif bullets:
            break
    resources: dict[str, frozenset[str]] = {}
    groups: frozenset[str] = frozenset()
    for bullet in bullets:
        names = _CODE.findall(_ASIDE.sub("", bullet.split(" — ", 1)[0]))
        if bullet.startswith("Whole API groups:"):
            groups = frozenset(names)
        else:
            version, *named = names
            group = version.rsplit("/", 1)[0] if "/" in version else ""
            resources[group] = frozenset(named)
    return NotServed(resources, groups)
