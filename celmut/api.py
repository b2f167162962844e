"""The public Python API: load policies, admit objects through them, explain, evaluate CEL.

Everything here is re-exported by :mod:`celmut` (``celmut.load``, ``celmut.Policies``, …); the
floors under it (``celmut.compile``, ``celmut.runtime``, ``celmut.service``) are internal and may
change. Offline, as ``celmut apply`` runs: CEL is bounded by its cost budget, lookups
(``resource.Get``, …) see the objects given as ``cluster``.

>>> import celmut
>>> policies = celmut.load("policies/examples/add-managed-by-label.yaml")
>>> pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop"},
...        "spec": {"containers": [{"name": "app", "image": "nginx"}]}}
>>> result = policies.apply(pod)
>>> result.object["metadata"]["labels"]
{'team': 'unowned'}
>>> [(o.policy, o.status) for o in result.outcomes]
[('add-team-label', 'applied')]
>>> celmut.eval("object.metadata.name + '!'", object=pod)
'web!'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from celmut import cel, kinds
from celmut.cel import types
from celmut.compile.pipeline import Compilation, compile_paths
from celmut.policy.errors import PolicySetError
from celmut.runtime import AdmissionEngine, AdmissionInput, AdmissionResult
from celmut.runtime.provenance import Provenance, from_outcomes
from celmut.service.assembly import EngineSettings, assemble_engine, crds_in, is_crd
from celmut.service.static_resources import StaticResources

__all__ = ["Policies", "eval", "load"]

_INPUTS = frozenset({"object", "old_object", "request", "namespace_object", "params", "variables"})


def load(*paths: str | os.PathLike[str], backend: str | None = None) -> Policies:
    """Compile every policy (and preset) in the files and folders ``paths``.

    Raises :class:`~celmut.policy.errors.PolicySetError` (a ``PolicyError``) listing every problem
    of every file at once, so nothing half-loaded is ever returned.

    >>> celmut.load("no/such/file.yaml")  # doctest: +SKIP
    Traceback (most recent call last):
    celmut.policy.errors.PolicySetError: no/such/file.yaml: no such file or directory
    """
    compilation = compile_paths(*(os.fspath(p) for p in paths), backend=backend)
    if compilation.errors:
        raise PolicySetError(list(compilation.errors))
    return Policies(compilation)


class Policies:
    """A compiled policy set, ready to admit objects (built by :func:`load`)."""

    def __init__(self, compilation: Compilation) -> None:
        self._compilation = compilation
        self._engine = self._assemble(())

    @property
    def names(self) -> list[str]:
        """The policies, in the order they evaluate (autogen variants after their policy)."""
        return [p.display_name for p in self._engine.policies]

    def apply(
        self,
        resource: Mapping[str, Any],
        *,
        operation: str = "CREATE",
        old: Mapping[str, Any] | None = None,
        cluster: Iterable[Mapping[str, Any]] = (),
        user_info: Mapping[str, Any] | None = None,
        explain: bool = False,
    ) -> AdmissionResult:
        """Admit ``resource`` as the webhook would on ``operation``; ``cluster`` holds the objects
        CEL lookups see (a Namespace gives ``namespaceObject`` and namespaceSelector labels).

        ``result.object`` is the mutated object, ``result.patch`` its RFC 6902 patch, and
        ``result.outcomes`` one :class:`~celmut.runtime.results.PolicyOutcome` per policy (applied,
        unchanged, skipped or excepted with a cause, or error with its ``message``)."""
        engine = self._engine if not cluster else self._assemble(cluster)
        obj, old_object = dict(resource), dict(old) if old is not None else None
        request = AdmissionInput.from_object(
            obj if operation != "DELETE" else None,
            operation,
            old_object=old_object if operation != "DELETE" else obj,
            user_info=dict(user_info or {}),
            kind_table=engine.options.schemas.kinds,
        )
        return engine.admit(request, explain=explain)

    def explain(
        self,
        resource: Mapping[str, Any],
        *,
        operation: str = "CREATE",
        old: Mapping[str, Any] | None = None,
        cluster: Iterable[Mapping[str, Any]] = (),
    ) -> Provenance:
        """Who changed which field of ``resource`` (policy and ``spec.mutations[N]``), and why every
        other policy did not apply — what ``celmut explain`` prints."""
        result = self.apply(resource, operation=operation, old=old, cluster=cluster, explain=True)
        return from_outcomes(result.outcomes, result.object if result.allowed else None)

    def _assemble(self, cluster: Iterable[Mapping[str, Any]]) -> AdmissionEngine:
        objects = [dict(o) for o in cluster]
        crds = [o for o in objects if is_crd(o)] + crds_in(self._compilation.other)
        resources = StaticResources(objects, kind_table=kinds.KindTable(crds))
        settings = EngineSettings(services=cel.Services(resources=resources), timeout_seconds=None)
        return assemble_engine(self._compilation, settings, crds)


def eval(expression: str, *, profile: str = "kyverno", backend: str | None = None, **inputs: Any) -> Any:
    """Evaluate one CEL expression in celmut's ``kyverno`` (or ``kubernetes``) environment, as
    ``celmut eval`` does; ``inputs`` bind ``object``, ``old_object``, ``request``,
    ``namespace_object``, ``params`` and ``variables`` (a dict: ``variables.NAME``).

    Returns plain Python values; raises :class:`~celmut.cel.CelError` (compile, evaluation or cost).

    >>> celmut.eval("variables.n * 2", variables={"n": 21})
    42
    """
    unknown = sorted(set(inputs) - _INPUTS)
    if unknown:
        raise TypeError(f"eval() got unexpected inputs {unknown}; expected some of {sorted(_INPUTS)}")
    variables: dict[str, Any] = dict(inputs.pop("variables", None) or {})
    env = cel.Environment(profile, variables={name: types.DYN for name in variables}, backend=backend)
    program = env.compile(expression)
    return cel.to_plain(program.evaluate(cel.Activation(**inputs, variable_values=variables)))
