"""Every policy of one admission request gets an activation derived from one per request
(``Activation.derive``): the request's parts are shared, each policy's own are not."""

from __future__ import annotations

import pytest

from celmut import cel
from celmut.cel.errors import CelInputError
from tests.cel.helpers import CEL_ENGINES


@pytest.mark.parametrize("engine", CEL_ENGINES)
def test_a_derived_activation_shares_the_request_and_keeps_its_own_object_and_variables(engine: str) -> None:
    env = cel.Environment("kyverno", backend=engine)
    budget = cel.Budget()
    old = {"metadata": {"name": "old"}}
    base = cel.Activation(
        old_object=old,
        request={"operation": "UPDATE", "namespace": "prod"},
        namespace_object={"metadata": {"name": "prod"}},
        budget=budget,
        input_size=10,
    )
    name = env.compile("object.metadata.name")
    first = base.derive(object={"metadata": {"name": "a"}}, variables={"v": env.compile("'first'")})
    second = base.derive(
        object={"metadata": {"name": "b"}},
        params={"p": 1},
        exceptions={"allowedValues": ["x"]},
        variables={"v": env.compile("'second'")},
    )
    seen = env.compile(
        "[request.operation, request.namespace, oldObject.metadata.name, namespaceObject.metadata.name,"
        " exceptions.allowedValues.size()]"
    )
    assert seen.evaluate(first) == ["UPDATE", "prod", "old", "prod", 0]
    assert seen.evaluate(second) == ["UPDATE", "prod", "old", "prod", 1]
    assert (first.variables.cel_select("v"), second.variables.cel_select("v")) == ("first", "second")
    assert second.vars["params"] == {"p": 1} and first.vars["params"] is None
    first.with_object({"metadata": {"name": "patched"}})
    assert (name.evaluate(first), name.evaluate(second)) == ("patched", "b")
    assert first.budget is second.budget is budget and first.services is base.services


def test_the_request_is_size_checked_once_when_the_base_is_built() -> None:
    with pytest.raises(CelInputError):
        cel.Activation(old_object={"a": "x" * 100}, max_input_bytes=50)
