"""client-go's EventCorrelator (``tools/record/events_cache.go``), case by case: what is created, what is a
count patch, what the spam filter holds back."""

from __future__ import annotations

from typing import Any

import pytest

from celmut.kube.event_correlator import AGGREGATE_PREFIX, EventCorrelator
from celmut.kube.events import event_for


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def event(name: str = "cm", message: str = "fail", reason: str = "PolicyViolation") -> dict[str, Any]:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "shop", "uid": name}}
    return event_for(obj, reason=reason, message=message, component="celmut-scan", warning=True)


def stored(correlator: EventCorrelator, result: Any) -> None:
    correlator.update_state(result.event)  # as the recorder does once the API server answered


def test_the_same_event_again_is_a_count_patch_of_the_first() -> None:
    """``eventObserve``: same key, so the stored Event is patched with count + 1 (name and first time kept)."""
    correlator = EventCorrelator(clock=Clock())
    first = correlator.correlate(event())
    assert first.patch is None and not first.skip
    stored(correlator, first)
    again = correlator.correlate(event())
    assert again.event["metadata"]["name"] == first.event["metadata"]["name"]
    assert again.patch is not None and again.patch["count"] == 2
    assert again.event["firstTimestamp"] == first.event["firstTimestamp"]


@pytest.mark.parametrize(
    ("distinct", "created", "combined_count"),
    [
        (9, 9, 0),  # under defaultAggregateMaxEvents (10): each message its own Event
        (10, 10, 1),  # the 10th distinct message becomes the combined Event
        (14, 10, 5),  # and the rest are counted on it
    ],
)
def test_similar_events_about_one_object_fold_from_the_tenth_message(
    distinct: int, created: int, combined_count: int
) -> None:
    """``EventAggregate``: messages that differ, same object and reason, within 10 minutes."""
    correlator = EventCorrelator(clock=Clock())
    names: set[str] = set()
    combined: dict[str, Any] | None = None
    for index in range(distinct):
        result = correlator.correlate(event(message=f"resource {index}"))
        assert not result.skip
        names.add(result.event["metadata"]["name"])
        stored(correlator, result)
        if result.event["message"].startswith(AGGREGATE_PREFIX):
            combined = result.event
    assert len(names) == created
    assert (combined or {}).get("count", 0) == combined_count
    if combined is not None:
        assert combined["message"] == AGGREGATE_PREFIX + f"resource {distinct - 1}"


def test_the_aggregation_window_closes_after_ten_quiet_minutes() -> None:
    clock = Clock()
    correlator = EventCorrelator(clock=clock)
    for index in range(10):
        stored(correlator, correlator.correlate(event(message=f"resource {index}")))
    clock.now += 601
    fresh = correlator.correlate(event(message="resource 10"))
    assert not fresh.event["message"].startswith(AGGREGATE_PREFIX) and fresh.patch is None


def test_a_source_may_post_25_events_about_one_object_then_one_every_five_minutes() -> None:
    """``EventSourceObjectSpamFilter``: a token bucket per source and object (burst 25, 1/300 per second);
    another object has its own."""
    clock = Clock()
    correlator = EventCorrelator(clock=clock)
    outcomes = [correlator.correlate(event(reason=f"R{i}")).skip for i in range(30)]
    assert outcomes == [False] * 25 + [True] * 5
    assert not correlator.correlate(event(name="other")).skip
    clock.now += 299
    assert correlator.correlate(event(reason="later")).skip
    clock.now += 2
    assert not correlator.correlate(event(reason="later")).skip


def test_occurrences_held_back_by_the_spam_filter_still_count() -> None:
    """The observation is recorded before the filter: the next write that passes carries the full count."""
    clock = Clock()
    correlator = EventCorrelator(clock=clock)
    for i in range(25):
        stored(correlator, correlator.correlate(event(reason=f"R{i}")))
    for _ in range(3):
        assert correlator.correlate(event(reason="R0")).skip
    clock.now += 300
    passed = correlator.correlate(event(reason="R0"))
    assert not passed.skip and passed.patch is not None and passed.patch["count"] == 5
