"""Shared pytest configuration: registers the fake Kubernetes API server fixtures (tests/fakekube)."""

pytest_plugins = ["tests.fakekube.fixtures"]
