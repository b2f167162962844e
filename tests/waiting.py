"""Waiting in tests for what other threads and processes do (watches, workers, servers, the reload loop).

A test waits for the condition it asserts, however long the machine takes to get there: CI runs on two
cores shared with other work, where what takes 50 ms on a quiet machine takes seconds. The one time
limit, :data:`HANG_SECONDS`, says the condition is never coming (a hang, a lost event): it is never
an expectation of how fast something happens, which no test asserts (Kubernetes' own tests wait
``wait.ForeverTestTimeout`` for what "should happen quickly", k8s.io/apimachinery/pkg/util/wait).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: How long a test waits before it calls a condition lost rather than late.
HANG_SECONDS = 60.0


def eventually(check: Callable[[], T], timeout: float = HANG_SECONDS, what: str = "condition") -> T:
    """Wait until ``check()`` is truthy and return it (``timeout``: the hang guard, seconds)."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return value
