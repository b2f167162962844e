"""``Budget.sliced``: the webhook's attempt on the event loop spends a copy of the request's budget."""

from __future__ import annotations

import dataclasses

from celmut import cel


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
