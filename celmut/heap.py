"""Keep Python's cyclic garbage collector off the hot paths of long-running processes, and give
memory back after a request that a limit stopped.

A webhook or controller holds hundreds of thousands of long-lived objects (compiled policies, the
grammar, watched caches of pods). With the default thresholds the collector runs every 700
allocations and a full collection walks all of them: seconds of CPU over a 10,000-pod scan, and
tens of milliseconds of pause in the webhook. :func:`settle` collects once, moves everything alive
into the permanent generation (``gc.freeze``; frozen objects are still freed by reference counting)
and raises the thresholds, so that short-lived request objects die before a collection looks at
them and full collections become rare (every ~100 million allocations).

The price: cyclic garbage waits for those rare collections. An evaluation stopped by a limit leaves
exactly that (the frames held by the exceptions that stopped it, and the values in them), so the
webhook calls :func:`reclaim` after such a request: one collection of the objects not frozen, then
``malloc_trim`` so the freed memory leaves the process.

:func:`tune` also caps glibc's malloc arenas at 2 (:data:`ARENAS`; glibc makes up to 8 per core, and a
thread's freed blocks stay in its arena: the controller's 20 workers, each decoding pages and responses,
held ~100 MiB more at 10,000 pods without the cap) and fixes glibc's mmap threshold at 128 KiB. glibc
raises it whenever a large block is
freed, after which every large buffer — the 256 KiB read buffer of each TLS connection in asyncio —
comes from the heap, is zeroed page by page and is rarely returned: idle connections then cost
their full buffer in RSS and keep it after they close. Below the fixed threshold, large buffers are
mapped on demand (untouched pages cost nothing) and unmapped when freed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import platform
from functools import cache
from typing import Any

THRESHOLDS = (50_000, 20, 100)
_M_MMAP_THRESHOLD = -3  # glibc mallopt parameters
_M_ARENA_MAX = -8
MMAP_THRESHOLD_BYTES = 128 * 1024
ARENAS = 2  # glibc's default is 8 per core: each thread's freed memory stays in its own arena


@cache
def _glibc() -> Any:
    """The C library when it is glibc (mallopt and malloc_trim are glibc's), else None."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def tune() -> None:
    """Collect less often, keep large buffers mapped and share few malloc arenas between threads (call
    when a long-running process starts, before it loads anything or starts threads)."""
    gc.set_threshold(*THRESHOLDS)
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        libc.mallopt(_M_ARENA_MAX, ARENAS)


def trim() -> None:
    """Give the memory freed since the last call back to the system (glibc ``malloc_trim``)."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def settle() -> None:
    """Collect, exempt every surviving object from future collections (call once loaded)."""
    gc.collect()
    gc.freeze()
    tune()


def reclaim() -> int:
    """Collect cyclic garbage now and return freed memory to the system; the objects collected."""
    found = gc.collect()
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)
    return found
