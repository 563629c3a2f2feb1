"""Recording kube's answers for the tests that replay them: an admin session to
the kube-apiserver that `../shared/kube/with_kube.sh` started (its KUBECONFIG),
and the one-line-a-step JSON the recorded files are written in, so that
`with_kube.sh .venv/bin/python -m tests.support.<cases> > <file>.json` makes
each file the same way. `make test` reads the files and never needs kube."""

from __future__ import annotations

import base64
import os
import ssl
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import orjson
import yaml

Obj = dict[str, Any]
Case = TypeVar("Case")


def kube_session(kubeconfig: Path, folder: Path) -> aiohttp.ClientSession:
    """An admin session to the kube-apiserver a kubeconfig names (its inline
    certificates written into folder)."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]

    def file(entry: Obj, key: str) -> str:
        if f"{key}-data" in entry:
            target = folder / key
            target.write_bytes(base64.b64decode(entry[f"{key}-data"]))
            return str(target)
        return str(entry[key])

    context = ssl.create_default_context(cafile=file(cluster, "certificate-authority"))
    headers = {}
    if "token" in user:
        headers["Authorization"] = f"Bearer {user['token']}"
    else:
        context.load_cert_chain(file(user, "client-certificate"), file(user, "client-key"))
    return aiohttp.ClientSession(
        base_url=cluster["server"], headers=headers, connector=aiohttp.TCPConnector(ssl=context)
    )


async def record(
    run: Callable[[aiohttp.ClientSession, Case], Awaitable[list[Obj]]],
    cases: Mapping[str, Case],
) -> None:
    """Run every case against $KUBECONFIG's kube and print the answers, one
    line a step, so that a re-recording's diff reads."""
    with tempfile.TemporaryDirectory() as folder:
        async with kube_session(Path(os.environ["KUBECONFIG"]), Path(folder)) as session:
            recorded = {name: await run(session, case) for name, case in cases.items()}
    lines = [
        f"  {orjson.dumps(name).decode()}: [\n"
        + ",\n".join(f"    {orjson.dumps(step).decode()}" for step in steps)
        + "\n  ]"
        for name, steps in recorded.items()
    ]
    sys.stdout.write("{\n" + ",\n".join(lines) + "\n}\n")
