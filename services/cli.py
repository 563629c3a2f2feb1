"""The `strata` command: operator tasks of the services (`strata storage reencrypt`)."""

from __future__ import annotations

import sys

from services.storage.__main__ import main as storage_main

USAGE = (
    "usage: strata storage reencrypt [--etcd ADDR] [--etcd-prefix PREFIX] "
    "--encryption-provider-config FILE"
)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["storage", "reencrypt"]:
        storage_main(["reencrypt", *argv[2:]])
        return
    raise SystemExit(USAGE)


if __name__ == "__main__":
    main()
