"""Running the whole of strata on loopback for development and tests.

`python -m strata.dev up` (what `make run` calls) finds or fetches etcd, starts
it and the four services as child processes, waits for each to be healthy and
writes a kubeconfig; tests and benchmarks use `System` the same way.
"""

from strata.dev._etcd import MINIMUM as ETCD_MINIMUM
from strata.dev._etcd import TOOLS, etcd_command, etcd_version, find_etcd
from strata.dev._lock import HomeBusy, HomeLock
from strata.dev._otlp import OtlpReceiver, ReceivedSpan
from strata.dev._system import Endpoints, System, free_port

__all__ = [
    "ETCD_MINIMUM",
    "TOOLS",
    "Endpoints",
    "HomeBusy",
    "HomeLock",
    "OtlpReceiver",
    "ReceivedSpan",
    "System",
    "etcd_command",
    "etcd_version",
    "find_etcd",
    "free_port",
]
