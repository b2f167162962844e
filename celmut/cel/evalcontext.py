"""The state of one evaluation: variable bindings, macro-variable slots, cost accounting, services.

An :class:`EvalContext` lives for one expression evaluation. The step budget is shared by all
expressions of a request through :class:`Budget`, and so are the wall-clock deadline and the bytes
of values the request may build (:meth:`EvalContext.allocate`).

Every charge checks the cost limits; every 2,000 units it also checks the deadline, so any
operation that charges as it works (see :mod:`celmut.cel.costs`) can be stopped mid-way — on a
worker thread too, which is what lets the webhook keep serving while one evaluation runs long.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from celmut.cel.errors import CelCostError, Reschedule

# Kubernetes' limits (k8s.io/apiserver/pkg/apis/cel/config.go): per expression and per request.
PER_CALL_COST_LIMIT = 1_000_000
REQUEST_COST_BUDGET = 10_000_000
DEFAULT_TIMEOUT_SECONDS = 2.0
# Bytes of values one request may build (strings, lists, maps: counted when built, freed or not).
# Kubernetes bounds memory only through cost; a Python value costs more memory per cost unit than a
# Go one, so celmut adds this ledger (sized in docs/security.md from measurements).
REQUEST_ALLOCATION_BYTES = 32 * 1024 * 1024
_CLOCK_CHECK_UNITS = 2_000


@dataclass(slots=True)
class Budget:
    """Cost units and wall time shared by every expression evaluated for one request."""

    limit: int = REQUEST_COST_BUDGET
    per_call_limit: int = PER_CALL_COST_LIMIT
    deadline: float | None = None  # time.monotonic() value
    spent: int = 0
    max_bytes: int = REQUEST_ALLOCATION_BYTES
    allocated: int = 0
    exhausted: bool = False  # a limit stopped an evaluation (its garbage may be worth collecting)
    # time.monotonic() value before which evaluation never stops with Reschedule, and time.thread_time()
    # value past which it does (the webhook's event loop evaluates a request for a short slice of CPU
    # time, then hands it to a worker thread; CPU time, so a process the OS descheduled mid-admission
    # finishes it instead of starting it again on a thread). A thread's CPU time never runs ahead of
    # the wall clock, so the cheap clock is read first and the thread's (a system call) only past it.
    preempt_at: float | None = None
    preempt_cpu: float | None = None

    @classmethod
    def with_timeout(cls, seconds: float | None = DEFAULT_TIMEOUT_SECONDS, **kwargs: Any) -> Budget:
        deadline = None if seconds is None else time.monotonic() + seconds
        return cls(deadline=deadline, **kwargs)

    def remaining(self) -> int:
        return self.limit - self.spent

    def sliced(self, preempt_at: float, preempt_cpu: float | None = None) -> Budget:
        """A copy that also stops with :class:`Reschedule` past ``preempt_at`` (``time.monotonic()``)
        and, when given, ``preempt_cpu`` (``time.thread_time()``): an attempt on the event loop;
        spending it leaves this budget as it was."""
        return Budget(
            self.limit, self.per_call_limit, self.deadline, self.spent, self.max_bytes, self.allocated,
            self.exhausted, preempt_at, preempt_cpu,
        )  # fmt: skip


@dataclass(slots=True)
class EvalContext:
    """Mutable per-evaluation state handed to every planned closure (one per evaluation: slotted,
    every field plain, so making one is a few attribute stores)."""

    vars: dict[str, Any]
    slots: list[Any]
    budget: Budget
    services: Any = None
    cost: int = 0
    limit: int = PER_CALL_COST_LIMIT
    next_clock_check: int = 0

    def charge(self, units: int) -> None:
        """Add cost units; raise :class:`CelCostError` past the limit or the deadline."""
        self.cost += units
        if self.cost > self.limit:
            self._over_budget()
        if self.cost >= self.next_clock_check:
            self.next_clock_check = self.cost + _CLOCK_CHECK_UNITS
            budget = self.budget
            if budget.deadline is not None and time.monotonic() > budget.deadline:
                budget.exhausted = True
                raise CelCostError("evaluation deadline exceeded")
            if (
                budget.preempt_at is not None
                and time.monotonic() > budget.preempt_at
                and (budget.preempt_cpu is None or time.thread_time() > budget.preempt_cpu)
            ):
                raise Reschedule("time slice over")

    def allocate(self, nbytes: int) -> None:
        """Count bytes of values this request built; raise :class:`CelCostError` past its limit."""
        budget = self.budget
        budget.allocated += nbytes
        if budget.allocated > budget.max_bytes:
            budget.exhausted = True
            raise CelCostError(f"operation cancelled: the request built more than {budget.max_bytes} bytes of values")

    def _over_budget(self) -> None:
        self.budget.exhausted = True
        if self.limit < self.budget.per_call_limit:
            # k8s.io/apiserver/pkg/admission/plugin/cel/composition.go (and filter.go): the request's budget
            raise CelCostError(
                "validation failed due to running out of cost budget, no further validation rules will be run"
            )
        # cel-go interpreter/runtimecost.go: the per-expression limit
        raise CelCostError("operation cancelled: actual cost limit exceeded")
