"""Which PodMutation wins when several match a pod: CAST AI's specificity scoring.

Score: workload names specified **4**, pod labels specified **2**, namespaces specified **1** (only
the include lists count: ``names``, ``labels``, ``namespaces`` / ``labelsFilter``; exclusions and
kinds add nothing). Equal scores are broken, in order, by: fewer workload name matchers; fewer
namespace matchers; more label conditions (include label matchers); the name, alphabetically.
With both ``filterV2`` and ``filter``, their counts add up.

The order depends only on the PodMutations, never on the pod, so it is computed at compile time:
each generated policy is told which PodMutations outrank it (see :mod:`.compiler`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from celmut.compile.presets.podmutation.model import PodMutation


@dataclass(frozen=True)
class Specificity:
    name: str
    names: int  # workload name matchers
    namespaces: int  # namespace matchers
    labels: int  # label conditions

    @property
    def score(self) -> int:
        return 4 * (self.names > 0) + 2 * (self.labels > 0) + 1 * (self.namespaces > 0)

    def sort_key(self) -> tuple[int, int, int, int, str]:
        """Most specific first."""
        return (-self.score, self.names, self.namespaces, -self.labels, self.name)

    def describe(self) -> str:
        return (
            f"score {self.score} (workload names: {self.names}, namespaces: {self.namespaces}, "
            f"label conditions: {self.labels})"
        )


def specificity(mutation: PodMutation) -> Specificity:
    return Specificity(
        name=mutation.name,
        names=sum(len(f.names) for f in mutation.filters),
        namespaces=sum(len(f.namespaces) for f in mutation.filters),
        labels=sum(len(f.labels.matchers) for f in mutation.filters if f.labels is not None),
    )


def rank(mutations: Iterable[PodMutation]) -> list[PodMutation]:
    """The PodMutations, most specific first."""
    return sorted(mutations, key=lambda m: specificity(m).sort_key())
