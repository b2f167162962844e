"""The cluster at celmut's edge: a JSON client, watched caches, lookups and policy sources.

Built on the official ``kubernetes`` client (configuration, authentication, TLS); used by the
webhook (``--from-cluster``) and the background controller. The runtime never imports this package:
it sees the cluster only through :class:`celmut.cel.lookups.ResourceLookup`.
"""

from celmut.kube.cache import WatchedCache
from celmut.kube.client import Cluster, ClusterError, Conflict, Gone, NotFound, TooManyRequests, Unreachable
from celmut.kube.lookup import CacheSet, ClusterLookup
from celmut.kube.policy_source import ClusterPolicySource
from celmut.kube.serving import ClusterConnection

__all__ = [
    "CacheSet",
    "Cluster",
    "ClusterConnection",
    "ClusterError",
    "ClusterLookup",
    "ClusterPolicySource",
    "Conflict",
    "Gone",
    "NotFound",
    "TooManyRequests",
    "Unreachable",
    "WatchedCache",
]
