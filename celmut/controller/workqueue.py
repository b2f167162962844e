"""The controller's work queue: keyed, de-duplicating, rate-limited, with retries and backoff.

Unlike Kyverno's UpdateRequests (one stored object per trigger), work lives in memory and is keyed
by target: adding a key that is already waiting merges the new work into it, so 10,000 triggers for
one target are one pass. A key being processed when it is added again is processed once more after
the current pass (never twice at the same time). Failed keys come back after an exponential backoff,
up to ``max_retries``. Waiting work can be brought up to date in place (:meth:`WorkQueue.update_waiting`),
and a producer can wait until what was queued before it has been processed
(:meth:`WorkQueue.wait_for_earlier`).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
W = TypeVar("W")


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` saved up."""

    def __init__(self, rate: float, burst: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = rate
        self.burst = max(1, burst if burst is not None else int(rate))
        self.clock = clock
        self._tokens = float(self.burst)
        self._stamp = clock()
        self._lock = threading.Lock()

    def _delay(self) -> float:
        """Take a token now (0.0) or say how long until one is available."""
        with self._lock:
            now = self.clock()
            self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now
            if self._tokens >= 1:
                self._tokens -= 1
                return 0.0
            return (1 - self._tokens) / self.rate

    def take(self, stop: threading.Event | None = None) -> bool:
        """Wait for a token; False when ``stop`` was set while waiting."""
        stop = stop or threading.Event()
        while (delay := self._delay()) > 0:
            if stop.wait(delay):
                return False
        return True


class WorkQueue(Generic[K, W]):
    """Keys with merged work; ``get`` hands out one key at a time per key."""

    def __init__(
        self,
        merge: Callable[[W, W], W],
        *,
        base_delay: float = 0.5,
        max_delay: float = 60.0,
        max_retries: int = 8,
    ) -> None:
        self.merge = merge
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_retries = max_retries
        self._ready: deque[K] = deque()
        self._work: dict[K, W] = {}  # waiting (ready or to be re-queued after processing)
        self._processing: dict[K, int] = {}  # key -> the ticket of the work being processed
        self._tickets: dict[K, int] = {}  # waiting key -> when its work first arrived (a sequence number)
        self._delayed: list[tuple[float, int, K, W]] = []
        self._attempts: dict[K, int] = {}
        self._sequence = itertools.count()
        self._arrivals = itertools.count(1)
        self._cond = threading.Condition()
        self._closed = False
        self.added = 0
        self.merged = 0

    def add(self, key: K, work: W) -> None:
        with self._cond:
            self._add_locked(key, work)

    def _add_locked(self, key: K, work: W) -> None:
        self.added += 1
        if key in self._work:
            self._work[key] = self.merge(self._work[key], work)
            self.merged += 1
            return
        self._work[key] = work
        self._tickets[key] = next(self._arrivals)
        if key not in self._processing:
            self._ready.append(key)
            self._cond.notify()

    def add_after(self, key: K, work: W, delay: float) -> None:
        with self._cond:
            heapq.heappush(self._delayed, (time.monotonic() + delay, next(self._sequence), key, work))
            self._cond.notify()

    def get(self, timeout: float | None = None) -> tuple[K, W] | None:
        """The next key and its work, or None on timeout or shutdown."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    _, _, key, work = heapq.heappop(self._delayed)
                    self._add_locked(key, work)
                if self._ready:
                    key = self._ready.popleft()
                    self._processing[key] = self._tickets.pop(key)
                    return key, self._work.pop(key)
                waits = [self._delayed[0][0] - now] if self._delayed else []
                if deadline is not None:
                    if deadline <= now:
                        return None
                    waits.append(deadline - now)
                self._cond.wait(min(waits) if waits else None)
            return None

    def done(self, key: K) -> None:
        """Processing of ``key`` finished; work added meanwhile is queued now."""
        with self._cond:
            self._processing.pop(key, None)
            if key in self._work:
                self._ready.append(key)
            self._cond.notify_all()  # a getter, and a producer waiting for room (wait_for_room)

    def wait_for_room(self, limit: int, stop: threading.Event, timeout: float = 1.0) -> bool:
        """Wait until fewer than ``limit`` keys wait (a producer's backpressure); False if ``stop`` was
        set or the queue shut down meanwhile."""
        with self._cond:
            while len(self._work) + len(self._delayed) >= limit:
                if stop.is_set() or self._closed:
                    return False
                self._cond.wait(timeout)
            return not (stop.is_set() or self._closed)

    def wait_for_earlier(self, stop: threading.Event, timeout: float = 1.0) -> bool:
        """Wait until every key waiting or being processed now has been processed (work added later, and
        work delayed for a retry, is not waited for): a producer about to read what those passes write.
        False if ``stop`` was set or the queue shut down meanwhile."""
        with self._cond:
            mark = next(self._arrivals)
            while any(t < mark for t in self._tickets.values()) or any(t < mark for t in self._processing.values()):
                if stop.is_set() or self._closed:
                    return False
                self._cond.wait(timeout)
            return not (stop.is_set() or self._closed)

    def update_waiting(self, key: K, update: Callable[[W], W]) -> None:
        """Replace the work waiting for ``key``, if any, with ``update(work)`` (not the work being
        processed, nor work delayed for a retry)."""
        with self._cond:
            work = self._work.get(key)
            if work is not None:
                self._work[key] = update(work)

    def forget(self, key: K) -> None:
        """Reset the retry count of ``key`` (it succeeded)."""
        with self._cond:
            self._attempts.pop(key, None)

    def retry(self, key: K, work: W) -> bool:
        """Queue ``work`` again after a backoff; False when ``key`` has used up its retries."""
        with self._cond:
            attempts = self._attempts.get(key, 0) + 1
            if attempts > self.max_retries:
                self._attempts.pop(key, None)
                return False
            self._attempts[key] = attempts
        self.add_after(key, work, min(self.base_delay * 2 ** (attempts - 1), self.max_delay))
        return True

    def depth(self) -> int:
        """Keys waiting (ready, re-queued or delayed), not counting those being processed."""
        with self._cond:
            return len(self._work) + len(self._delayed)

    def idle(self) -> bool:
        with self._cond:
            return not self._work and not self._delayed and not self._processing

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
