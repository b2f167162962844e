"""The cluster at celmut's edge: a JSON client, watched caches, lookups, policy sources and the
webhook's TLS material.

Built on the official ``kubernetes`` client (configuration, authentication, TLS); used by the
webhook (``--from-cluster``) and the background controller. This is the only package that imports
``kubernetes`` (an import contract checks it). The runtime never imports it: it sees the cluster only
through :class:`celmut.cel.lookups.ResourceLookup`.

Import the modules (``celmut.kube.client``, ``celmut.kube.cache``, …): this package re-exports
nothing, so a surface that only needs :mod:`celmut.kube.certs` does not load the Kubernetes client.
"""
