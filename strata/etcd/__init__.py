"""A small asyncio etcd v3 client on stubs generated from protos/etcd.

Written here rather than taken from PyPI: the `etcd3` package does not import
with protobuf >= 4, and aetcd hides range limit/revision/count_only and watch
header revisions, which pagination and bookmarks need. Every call opens one
manual CLIENT span ("etcd <Method>") instead of gRPC instrumentation on this
channel, which measured too costly.
"""

from strata.etcd._client import Etcd, EtcdTLS, prefix_end

__all__ = ["Etcd", "EtcdTLS", "prefix_end"]
