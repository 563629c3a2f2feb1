"""strata.client: an asyncio client for strata and any Kubernetes API server,
with client-go's informer machinery (Reflector, DeltaFIFO, Indexer, shared
informers, a rate-limited work queue).

    config = load_config()                 # kubeconfig or in-cluster, as kubectl
    async with RestClient(config) as rest:
        pods = DynamicClient(rest).resource(Resource(version="v1", resource="pods"))
        async for pod in pods.iterate(all_namespaces=True):
            ...
"""

from strata.client._config import (
    Config,
    ConfigError,
    ExecConfig,
    in_cluster,
    load_config,
    load_kubeconfig,
)
from strata.client._delta_fifo import Delta, DeltaFIFO, DeltaType
from strata.client._discovery import APIResource, DiscoveryClient
from strata.client._dynamic import DynamicClient, Resource, ResourceClient, WatchEvent
from strata.client._errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Expired,
    Forbidden,
    InternalError,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServiceUnavailable,
    Timeout,
    TooManyRequests,
    Unauthorized,
    api_error,
)
from strata.client._indexer import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    Indexer,
    Lister,
    NamespaceLister,
    object_key,
)
from strata.client._informer import EventHandler, SharedIndexInformer, SharedInformerFactory
from strata.client._reflector import ListerWatcher, Reflector
from strata.client._registry import RegistryResourceClient
from strata.client._rest import RestClient, parse_warnings
from strata.client._workqueue import (
    BucketRateLimiter,
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueue,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)

__all__ = [
    "NAMESPACE_INDEX",
    "APIResource",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "BucketRateLimiter",
    "Config",
    "ConfigError",
    "Conflict",
    "DelayingQueue",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "DiscoveryClient",
    "DynamicClient",
    "EventHandler",
    "ExecConfig",
    "Expired",
    "Forbidden",
    "Indexer",
    "InternalError",
    "Invalid",
    "ItemExponentialFailureRateLimiter",
    "Lister",
    "ListerWatcher",
    "MaxOfRateLimiter",
    "MethodNotAllowed",
    "NamespaceLister",
    "NotFound",
    "RateLimitingQueue",
    "Reflector",
    "RegistryResourceClient",
    "Resource",
    "ResourceClient",
    "RestClient",
    "ServiceUnavailable",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "ShutDown",
    "Timeout",
    "TooManyRequests",
    "Unauthorized",
    "WatchEvent",
    "WorkQueue",
    "api_error",
    "default_controller_rate_limiter",
    "in_cluster",
    "load_config",
    "load_kubeconfig",
    "object_key",
    "parse_warnings",
]
