"""The work queue de-duplicates by key, never hands one key to two workers, and retries with backoff."""

from __future__ import annotations

import threading
import time

import pytest

from celmut.controller.workqueue import TokenBucket, WorkQueue
from tests.waiting import HANG_SECONDS


def union(a: set[str], b: set[str]) -> set[str]:
    return a | b


def test_ten_thousand_triggers_for_one_target_are_one_pass() -> None:
    queue: WorkQueue[str, set[str]] = WorkQueue(union)
    for index in range(10_000):
        queue.add("pod/web", {f"policy-{index % 3}"})
    assert queue.get(0) == ("pod/web", {"policy-0", "policy-1", "policy-2"})
    queue.done("pod/web")
    assert queue.get(0) is None and queue.idle()


def test_work_added_while_a_key_is_processed_waits_for_that_pass() -> None:
    queue: WorkQueue[str, set[str]] = WorkQueue(union)
    queue.add("a", {"first"})
    assert queue.get(0) == ("a", {"first"})
    queue.add("a", {"second"})
    assert queue.get(0) is None  # not handed to a second worker while "a" is being processed
    queue.done("a")
    assert queue.get(0) == ("a", {"second"})


def test_keys_come_out_in_arrival_order() -> None:
    queue: WorkQueue[str, set[str]] = WorkQueue(union)
    for key in ("c", "a", "b", "a"):
        queue.add(key, {key})
    assert [queue.get(0)[0] for _ in range(3)] == ["c", "a", "b"]  # type: ignore[index]


def test_retries_back_off_and_give_up() -> None:
    queue: WorkQueue[str, set[str]] = WorkQueue(union, base_delay=0.05, max_retries=2)
    queue.add("a", {"w"})
    key, work = queue.get(0)  # type: ignore[misc]
    queue.done(key)
    started = time.monotonic()  # before the retry is scheduled: a thread descheduled here only waits longer
    assert queue.retry(key, work)
    assert queue.get(HANG_SECONDS) == ("a", {"w"})
    assert time.monotonic() - started >= 0.04  # the first retry waits base_delay
    queue.done("a")
    assert queue.retry("a", {"w"})
    assert queue.get(HANG_SECONDS) is not None
    queue.done("a")
    assert not queue.retry("a", {"w"})  # the third failure gives up


def test_a_blocked_get_wakes_on_add_and_on_shutdown() -> None:
    queue: WorkQueue[str, set[str]] = WorkQueue(union)
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(queue.get()))
    thread.start()
    queue.add("a", {"w"})
    thread.join(HANG_SECONDS)
    assert got == [("a", {"w"})]
    thread = threading.Thread(target=lambda: got.append(queue.get()))
    thread.start()
    queue.shutdown()
    thread.join(HANG_SECONDS)
    assert got[-1] is None


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_allows_a_burst_then_the_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10, burst=3, clock=clock)
    assert [bucket._delay() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket._delay() == pytest.approx(0.1)
    clock.now += 0.1
    assert bucket._delay() == 0.0
    clock.now += 10  # idle time refills only up to the burst
    assert [bucket._delay() == 0.0 for _ in range(4)] == [True, True, True, False]


def test_token_bucket_take_stops_when_asked() -> None:
    bucket = TokenBucket(rate=0.01, burst=1)
    assert bucket.take()
    stop = threading.Event()
    stop.set()
    assert not bucket.take(stop)


def test_wait_for_earlier_waits_for_the_work_queued_before_it_not_for_later_work() -> None:
    """A sweep lists only after the passes over what was queued before it (their writes are then in
    what it lists); work queued while it waits, or delayed for a retry, does not hold it up."""
    queue: WorkQueue[str, set[str]] = WorkQueue(union)
    queue.add("a", {"w"})
    queue.add("b", {"w"})
    queue.add_after("retry", {"w"}, 60.0)
    assert queue.get(0) == ("a", {"w"})
    queue.add("a", {"again"})  # while "a" is processed: one more pass after this one, queued before the mark
    stop = threading.Event()
    waited: list[bool] = []
    waiter = threading.Thread(target=lambda: waited.append(queue.wait_for_earlier(stop, timeout=0.05)))
    waiter.start()
    queue.done("a")
    queue.add("later", {"w"})
    for expected in ("b", "a"):
        waiter.join(0.1)
        assert waiter.is_alive() and not waited, f"returned before {expected} was processed"
        item = queue.get(0)
        assert item is not None and item[0] == expected
        queue.done(expected)
    waiter.join(2)
    assert waited == [True]
    assert queue.depth() == 2  # "later" and the retry still wait: neither held the waiter up


def test_wait_for_earlier_gives_up_when_stopped() -> None:
    queue: WorkQueue[str, set[str]] = WorkQueue(union)
    queue.add("a", {"w"})
    stop = threading.Event()
    stop.set()
    assert not queue.wait_for_earlier(stop, timeout=0.01)


def test_update_waiting_changes_only_the_work_waiting_for_the_key() -> None:
    queue: WorkQueue[str, set[str]] = WorkQueue(union)
    queue.add("a", {"old"})
    queue.update_waiting("a", lambda work: work | {"newer"})
    queue.update_waiting("absent", lambda work: work | {"newer"})  # nothing waits: nothing queued
    assert queue.get(0) == ("a", {"old", "newer"})
    queue.update_waiting("a", lambda work: work | {"lost"})  # being processed: not touched
    queue.done("a")
    assert queue.get(0) is None and queue.idle()
