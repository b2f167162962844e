"""Tests of the fake Kubernetes API server, driven only through the official ``kubernetes`` client."""
