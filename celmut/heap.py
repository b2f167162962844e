"""Keep Python's cyclic garbage collector off the hot paths of long-running processes.

A webhook or controller holds hundreds of thousands of long-lived objects (compiled policies, the
grammar, watched caches of pods). With the default thresholds the collector runs every 700
allocations and a full collection walks all of them: seconds of CPU over a 10,000-pod scan, and
tens of milliseconds of pause in the webhook. :func:`settle` collects once, moves everything alive
into the permanent generation (``gc.freeze``; frozen objects are still freed by reference counting)
and raises the thresholds, so that short-lived request objects die before a collection looks at
them and full collections become rare (every ~100 million allocations).
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 100)


def tune() -> None:
    """Collect less often (call when a long-running process starts, before it loads anything)."""
    gc.set_threshold(*THRESHOLDS)


def settle() -> None:
    """Collect, exempt every surviving object from future collections (call once loaded)."""
    gc.collect()
    gc.freeze()
    tune()
