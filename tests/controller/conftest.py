"""Fixtures for controller tests: celmut's Cluster client on the fake API server."""

from tests.kube.conftest import cluster  # noqa: F401  (re-exported fixture)
