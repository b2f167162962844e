"""How much of an admission is work no pipeline can remove: the floor a pipeline fused per request kind meets.

For one request of a policy set, each operation the admission cannot do without is timed alone (µs,
median of repeats): decoding and checking the review; each matchCondition the request evaluates (up
to the first false one of each policy), as its compiled CEL program; each mutation of each applied
policy — its CEL, the bound on its result's size, and its JSON Patch or ApplyConfiguration applied
to the object as the mutation before it left it; the response's patch (the diff of the original
and the final object); the response with its audit annotations. Their sum is what is left when
everything around them — per-policy dispatch, outcomes, activations, the budget's bookkeeping,
metrics — costs nothing. Beside it, the webhook's whole per-request work (``Admission.inline``, as
``serve_loop_bench.py`` measures it): the difference is all a fused pipeline could remove, and more
(each leaf is timed again and again on the same, warm objects, where a request's are new: the leaves
are a lower bound, so what is around them is an upper bound).

    python benchmarks/leaf_floor_bench.py [--policies all-pods matching no-match]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))

from timing import per_call_us, table  # noqa: E402


def leaf_times(policy_set: str) -> dict[str, float]:
    """µs per request of each kind of leaf operation, and of the webhook's whole work."""
    import serve_loop_bench
    from workloads import admission_review

    from celmut import cel
    from celmut.compile.pipeline import compile_documents
    from celmut.runtime import semantics
    from celmut.runtime.engine import AdmissionEngine
    from celmut.runtime.mutation_step import apply_mutation
    from celmut.runtime.patch import diff
    from celmut.server.admission import Admission
    from celmut.server.metrics import Metrics
    from celmut.server.review import build_response, parse_review
    from celmut.service.assembly import assemble_engine
    from celmut.service.settings import surface_engine
    from celmut.sources.documents import Document

    chosen, pod = serve_loop_bench._policy_set(policy_set)
    engine: AdmissionEngine = assemble_engine(
        compile_documents(Document("bench.yaml", i, d) for i, d in enumerate(chosen)), surface_engine()
    )
    body = admission_review(pod)
    review = parse_review(body)
    request = review.request

    def budget() -> cel.Budget:
        return cel.Budget.with_timeout(100.0)

    explained = engine.admit(request, budget(), explain=True)
    result = engine.admit(request, budget())
    by_name = {p.display_name: p for p in engine.policies}
    cel_request = request.cel_request()

    unlimited = cel.Budget(limit=1 << 62, max_bytes=1 << 62)  # the timed loops run each operation many times
    base = cel.Activation(object=None, old_object=request.old_object, request=cel_request, budget=unlimited)

    def activation(policy: Any, obj: Any) -> cel.Activation:
        """A fresh activation (its variables not yet evaluated) for ``policy`` on ``obj``."""
        return base.derive(object=obj, variables=policy.variables)

    conditions: list[tuple[Any, Any, Any]] = []  # (policy, program, object) per condition evaluated
    mutations: list[tuple[Any, Any, Any]] = []  # (policy, mutation, object before it) per mutation applied
    current = request.object
    for outcome in explained.outcomes:
        policy = by_name[outcome.policy]
        if outcome.status == "skipped" and outcome.cause != "matchCondition":
            continue  # left out before any CEL ran (its kind, its namespace)
        for condition in policy.match_conditions:
            conditions.append((policy, condition.program, current))
            if condition.name == outcome.cause_name:
                break
        for step in outcome.steps or ():
            mutations.append((policy, policy.mutations[step.index], step.before))
        if outcome.status == "applied":
            current = outcome.after

    def run_conditions() -> None:
        for policy, program, obj in conditions:
            program.evaluate(activation(policy, obj))

    def run_mutations() -> None:
        for policy, mutation, before in mutations:
            apply_mutation(
                engine.options, semantics.of(policy), policy, mutation, activation(policy, before), before,
                pointers=engine.pointer_tokens,
            )  # fmt: skip

    activation_alone = per_call_us(lambda: activation(engine.policies[0], pod)) if engine.policies else 0.0
    admission = Admission(Metrics(), None)
    return {
        "decode and check the review": per_call_us(lambda: parse_review(body)),
        f"{len(conditions)} matchConditions (CEL)": per_call_us(run_conditions) - len(conditions) * activation_alone,
        f"{len(mutations)} mutations (CEL, size bound, apply)": per_call_us(run_mutations)
        - len(mutations) * activation_alone,
        "the response's patch (diff)": per_call_us(lambda: diff(result.original, result.object)),
        "the response, its audit annotations": per_call_us(
            lambda: build_response(review, result, engine.pointer_tokens)
        ),
        "webhook": per_call_us(
            lambda: admission.inline(body, engine, budget(), None, time.perf_counter(), 100.0), min_time=1.0
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--policies", nargs="+", default=["all-pods", "matching", "no-match"],
        choices=["all-pods", "matching", "no-match", "one-label", "none"],
    )  # fmt: skip
    args = parser.parse_args()
    for policy_set in args.policies:
        times = leaf_times(policy_set)
        webhook = times.pop("webhook")
        leaves = sum(times.values())
        rows = [[name, f"{value:.1f}"] for name, value in times.items()]
        rows.append(["leaf work, summed", f"{leaves:.1f}"])
        rows.append(["the webhook's whole per-request work", f"{webhook:.1f}"])
        rows.append(["everything around the leaves", f"{webhook - leaves:.1f} ({(webhook - leaves) / webhook:.0%})"])
        print(table(f"\n{policy_set}: µs per request (medians)", ["operation", "µs"], rows))


if __name__ == "__main__":
    main()
