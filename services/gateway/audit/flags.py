"""kube's audit flags for the gateway (--audit-policy-file, --audit-log-path
and the log's rotation and buffer), with kube's defaults, and the AuditConfig
they make. As in kube, auditing needs both a policy and a log path; either
alone audits nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

from services.gateway.audit import policy
from services.gateway.audit.auditor import AuditConfig
from services.gateway.audit.log import BUFFER_SIZE
from services.gateway.audit.rotation import MEGABYTE, RotatingFile, Sink, Stdout
from strata import service


class FlagError(Exception):
    """An audit flag whose value cannot be used; the message names it."""


def add_flags(parser: argparse.ArgumentParser) -> None:
    service.flag(
        parser,
        "audit-policy-file",
        "STRATA_AUDIT_POLICY_FILE",
        "",
        "kube's audit policy (audit.k8s.io/v1 Policy): which requests are audited, and how much",
    )
    service.flag(
        parser,
        "audit-log-path",
        "STRATA_AUDIT_LOG_PATH",
        "",
        "file the audit events are written to, a JSON line each ('-': standard output)",
    )
    for name, default, what in (
        ("maxsize", "100", "megabytes an audit log file reaches before it is rotated (0: never)"),
        ("maxbackup", "100", "rotated audit log files kept (0: all)"),
        ("maxage", "366", "days a rotated audit log file is kept, by its name's time (0: any)"),
        (
            "batch-buffer-size",
            str(BUFFER_SIZE),
            "audit events waiting to be written at most; more are dropped and counted",
        ),
    ):
        env = "STRATA_AUDIT_LOG_" + name.upper().replace("-", "_")
        service.flag(parser, f"audit-log-{name}", env, default, what)


def _count(args: argparse.Namespace, name: str, least: int = 0) -> int:
    text = getattr(args, "audit_log_" + name.replace("-", "_"))
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise FlagError(
            f"--audit-log-{name}: want a whole number of at least {least}, got {text!r}"
        )
    return value


def config_from(args: argparse.Namespace) -> AuditConfig | None:
    """The audit the flags ask for, or None; the log file is opened here, so
    that one that cannot be written stops the gateway at start."""
    if not args.audit_policy_file or not args.audit_log_path:
        return None
    try:
        loaded = policy.load(Path(args.audit_policy_file))
    except (OSError, policy.PolicyError) as e:
        raise FlagError(f"--audit-policy-file: {e}") from None
    buffer_size = _count(args, "batch-buffer-size", least=1)
    sink: Sink
    if args.audit_log_path == "-":
        sink = Stdout()
    else:
        rotating = RotatingFile(
            Path(args.audit_log_path),
            max_bytes=_count(args, "maxsize") * MEGABYTE,
            max_backups=_count(args, "maxbackup"),
            max_age_days=_count(args, "maxage"),
        )
        try:
            rotating.open()
        except OSError as e:
            raise FlagError(f"--audit-log-path: {e}") from None
        sink = rotating
    return AuditConfig(loaded, sink, buffer_size)
