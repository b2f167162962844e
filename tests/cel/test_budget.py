"""``Budget.sliced``: the webhook's attempt on the event loop spends a copy of the request's budget."""

from __future__ import annotations

import dataclasses
import time

import pytest

from celmut import cel
from celmut.cel.errors import Reschedule
from celmut.cel.evalcontext import EvalContext


def test_a_slice_copies_every_field_of_the_budget_but_its_preemption_time() -> None:
    budget = cel.Budget(limit=7, per_call_limit=5, deadline=3.0, spent=2, max_bytes=11, allocated=4, exhausted=True)
    sliced = budget.sliced(9.5)
    # written field by field for speed: a field added to Budget later must be copied too
    assert sliced == dataclasses.replace(budget, preempt_at=9.5)


def test_spending_a_slice_leaves_the_request_budget_unspent() -> None:
    budget = cel.Budget.with_timeout(10.0)
    sliced = budget.sliced(1.0)
    sliced.spent += 100
    sliced.allocated += 100
    sliced.exhausted = True
    assert (budget.spent, budget.allocated, budget.exhausted, budget.preempt_at) == (0, 0, False, None)


def test_the_slice_is_cpu_time_so_a_descheduled_evaluation_is_not_preempted() -> None:
    """Issue 36: the webhook's slice on the event loop counts the thread's CPU time. A thread that did
    not run (here: slept, as a process the OS descheduled) has not used its slice; one that ran past
    it is preempted at its next clock check."""
    budget = cel.Budget().sliced(time.monotonic() + 0.02, time.thread_time() + 0.02)
    context = EvalContext({}, [], budget)
    time.sleep(0.05)  # wall time passes, CPU time does not
    context.charge(5_000)  # past a clock check
    started = time.thread_time()
    while time.thread_time() <= budget.preempt_cpu:  # type: ignore[operator]
        sum(range(1000))  # use the CPU until the slice is over
    assert time.thread_time() > started
    with pytest.raises(Reschedule):
        context.charge(5_000)
