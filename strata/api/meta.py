"""Object metadata helpers: timestamps in kube's RFC 3339 form and the
human-readable ages kubectl shows in tables (apimachinery's HumanDuration)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

# The last second formatted, and its text: every write stamps a time or two.
_formatted: tuple[int, str] = (0, "")


def now_rfc3339() -> str:
    global _formatted
    second = int(time.time())
    if _formatted[0] != second:
        _formatted = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return _formatted[1]


def parse_rfc3339(value: str) -> datetime:
    """A metav1.Time or metav1.MicroTime (fractional seconds) in UTC."""
    return datetime.fromisoformat(value).astimezone(UTC)


def human_duration(seconds: float) -> str:
    """apimachinery/pkg/util/duration.HumanDuration."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    s = int(seconds)
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = (s % 3600) // 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y{days}d" if days else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age(creation_timestamp: str | None, now: datetime | None = None) -> str:
    if not creation_timestamp:
        return "<unknown>"
    now = now or datetime.now(UTC)
    return human_duration((now - parse_rfc3339(creation_timestamp)).total_seconds())


def now_micro() -> str:
    """metav1.MicroTime's form (a Lease's acquireTime and renewTime)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
