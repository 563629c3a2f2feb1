"""Finding an etcd binary, fetching Debian trixie's etcd-server when needed.

Consistent reads from cache need watch progress notifications in order, which
etcd 3.4.23 (bookworm's etcd-server) gets wrong (etcd-io/etcd#15220); trixie's
3.5.16 runs on bookworm. It is fetched with apt-get under a private apt
configuration into a project-local folder and unpacked with dpkg -x, so the
machine's own apt state is left alone. A .deb already downloaded there is
unpacked without asking apt again (the unpacked tree may have been removed, or
the machine may be offline).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

MINIMUM = (3, 5, 13)
TOOLS = Path(__file__).resolve().parents[2] / ".tools"
_SOURCES = """Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def etcd_version(binary: str | Path) -> tuple[int, int, int] | None:
    try:
        out = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except OSError:
        return None
    m = re.search(r"etcd Version: (\d+)\.(\d+)\.(\d+)", out)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def _shown(path: Path) -> Path:
    """path as a person in the repository would type it."""
    return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def _download(apt: Path) -> None:
    """apt-get download etcd-server into apt/ with a private apt configuration."""
    for sub in ("lists/partial", "cache/archives/partial", "etc"):
        (apt / sub).mkdir(parents=True, exist_ok=True)
    sources = apt / "etc" / "trixie.sources"
    sources.write_text(_SOURCES)
    options = [
        "-o", f"Dir::Etc::sourcelist={sources}",
        "-o", "Dir::Etc::sourceparts=/dev/null",
        "-o", f"Dir::State::Lists={apt / 'lists'}",
        "-o", f"Dir::Cache={apt / 'cache'}",
        "-o", "Dir::State::status=/dev/null",
        "-o", "APT::Sandbox::User=root",
    ]  # fmt: skip
    subprocess.run(["apt-get", *options, "update"], check=True, capture_output=True)
    subprocess.run(
        ["apt-get", *options, "download", "etcd-server"],
        check=True,
        capture_output=True,
        cwd=apt,
    )


def _unpack(tools: Path, progress: Callable[[str], None]) -> Path | None:
    """The etcd binary of the newest .deb in tools/apt, unpacked into tools/etcd."""
    debs = sorted((tools / "apt").glob("etcd-server_*.deb"))
    if not debs:
        return None
    root = tools / "etcd"
    progress(f"unpacking {debs[-1].name} into {_shown(root)}/")
    shutil.rmtree(root, ignore_errors=True)
    try:
        subprocess.run(["dpkg", "-x", str(debs[-1]), str(root)], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    binary = root / "usr" / "bin" / "etcd"
    return binary if binary.exists() else None


def _fetch(tools: Path, progress: Callable[[str], None]) -> Path | None:
    if (unpacked := _unpack(tools, progress)) is not None:  # downloaded before
        return unpacked
    progress(
        f"fetching etcd-server (etcd >= {'.'.join(map(str, MINIMUM))}) from Debian trixie "
        f"into {_shown(tools / 'apt')}/ (once; apt-get update and download take a while)"
    )
    try:
        _download(tools / "apt")
    except (OSError, subprocess.CalledProcessError):
        return None
    return _unpack(tools, progress)


def etcd_command(
    binary: Path,
    *,
    data_dir: Path,
    client_url: str,
    peer_port: int,
    name: str = "strata",
    log_level: str = "error",
    peer_scheme: str = "http",
    extra: tuple[str, ...] = (),
) -> list[str]:
    """The command line of a one-member etcd on loopback serving client_url
    ("http://127.0.0.1:PORT", or https with TLS flags in extra), its peer URL
    on peer_port (http, or https with the peer's TLS flags in extra)."""
    peer_url = f"{peer_scheme}://127.0.0.1:{peer_port}"
    return [
        str(binary),
        f"--name={name}",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster={name}={peer_url}",
        "--listen-metrics-urls=",
        f"--log-level={log_level}",
        *extra,
    ]


def find_etcd(
    tools: Path = TOOLS, *, fetch: bool = True, progress: Callable[[str], None] | None = None
) -> Path:
    """An etcd >= 3.5.13 if one can be had, else any etcd on PATH.

    STRATA_ETCD_BINARY names one to use as it is. progress, if given, is told
    each step of a fetch as it begins.
    """
    local = tools / "etcd" / "usr" / "bin" / "etcd"
    override = os.environ.get("STRATA_ETCD_BINARY")
    if override:
        return Path(override)
    for candidate in (local, shutil.which("etcd")):
        if candidate and (version := etcd_version(candidate)) and version >= MINIMUM:
            return Path(candidate)
    if fetch and (fetched := _fetch(tools, progress or (lambda _step: None))) is not None:
        return fetched
    on_path = shutil.which("etcd")
    if on_path:
        return Path(on_path)
    raise SystemExit(
        "no etcd found: fetching Debian's etcd-server failed and none is on PATH "
        "(set STRATA_ETCD_BINARY to one)"
    )
