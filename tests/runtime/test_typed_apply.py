"""ApplyConfigurations (and JSONPatches) typed as kube-apiserver types them, family by family
(tests/typed_apply/), for a MutatingAdmissionPolicy and a Kyverno MutatingPolicy; the answers recorded
on a real API server (tests/data/typed-apply/, written by benchmarks/typed_apply_real.py) replayed;
and random well-typed ApplyConfigurations never refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from celmut.kinds import bundled_definitions
from celmut.runtime.go_field_order import GO_FIELD_ORDER
from tests.runtime.helpers import admit, applyconfig, engine, map_policy, mpol
from tests.typed_apply.cases import CASES
from tests.typed_apply.model import SEMANTICS, Case, agrees, base_object, check, run

RECORDED = Path(__file__).parent.parent / "data" / "typed-apply"
CASES_BY_ID = {case.id: case for case in CASES}
# Where the C++ engine cannot hand back what cel-python does (its results are plain JSON values).
CPP_LIMITS = {
    "int32-field-given-a-uint": "the C++ engine hands a CEL uint back as a plain int, so its uint64 type is lost",
}


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("case", CASES, ids=[f"{c.family}:{c.id}" for c in CASES])
def test_typed_like_the_api_server(semantics: str, case: Case, cel_engine: str) -> None:
    """Each case names the upstream function it pins (``case.upstream``)."""
    if cel_engine == "cpp" and case.id in CPP_LIMITS:
        pytest.xfail(CPP_LIMITS[case.id])
    check(run(semantics, case), case, semantics)


def recorded_answers() -> list[dict[str, Any]]:
    return [answer for path in sorted(RECORDED.glob("*.json")) for answer in json.loads(path.read_text())["cases"]]


@pytest.mark.parametrize("answer", recorded_answers(), ids=lambda a: a["id"])
def test_agrees_with_the_answers_recorded_on_a_real_api_server(answer: dict[str, Any], cel_engine: str) -> None:
    """Each recorded case, run through celmut as a MutatingAdmissionPolicy on the recorded expression and
    object: the same outcome and, for a denial, one of the API server's messages (its lines in any
    order); for an admission, the recorded fields."""
    if cel_engine == "cpp" and answer["id"] in CPP_LIMITS:
        pytest.xfail(CPP_LIMITS[answer["id"]])
    case = CASES_BY_ID[answer["id"]]
    assert (case.expression, case.patch_type) == (answer["expression"], answer["patchType"]), "re-record the answers"
    result = run("MutatingAdmissionPolicy", case)
    assert agrees(result, answer), (answer["reasons"] or answer.get("fields"), result.message or result.object)


def test_the_recorded_answers_cover_every_case() -> None:
    recorded = {answer["id"] for answer in recorded_answers()}
    if not recorded:
        pytest.skip("no answers recorded yet (benchmarks/typed_apply_real.py --record)")
    assert recorded == set(CASES_BY_ID)


# --- random well-typed ApplyConfigurations are never refused ----------------------------------------------

_names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=10).filter(
    lambda s: s[0].isalpha() and s[-1] != "-"
)
_strings = st.text(alphabet=st.characters(codec="ascii", exclude_characters='"\\'), max_size=12)
_int32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)


def _cel_string(text: str) -> str:
    return json.dumps(text)


@st.composite
def well_typed_deployment_configuration(draw: st.DrawFn) -> str:
    """An ApplyConfiguration of a Deployment, every field of the schema's type: ints into integer
    fields, strings into strings and maps of strings, booleans into booleans, int-or-string either."""
    spec: list[str] = []
    if draw(st.booleans()):
        spec.append(f"replicas: {draw(_int32)}")
    if draw(st.booleans()):
        spec.append(f"paused: {str(draw(st.booleans())).lower()}")
    if draw(st.booleans()):
        surge = draw(st.one_of(_int32.map(str), st.integers(0, 100).map(lambda n: f'"{n}%"')))
        spec.append(
            f"strategy: Object.spec.strategy{{rollingUpdate: Object.spec.strategy.rollingUpdate{{maxSurge: {surge}}}}}"
        )
    containers = []
    for name in draw(st.lists(_names, max_size=3, unique=True)):
        fields = [f'name: "{name}"', f"image: {_cel_string(draw(_strings))}"]
        if draw(st.booleans()):
            fields.append(f'imagePullPolicy: "{draw(st.sampled_from(["Always", "IfNotPresent", "Never"]))}"')
        if draw(st.booleans()):
            cpu = draw(st.integers(1, 64))
            fields.append(
                f'resources: {"Object.spec.template.spec.containers.resources"}{{limits: {{"cpu": "{cpu}"}}}}'
            )
        containers.append("Object.spec.template.spec.containers{" + ", ".join(fields) + "}")
    labels = draw(st.dictionaries(_names, _strings.map(_cel_string), max_size=3))
    template_spec = f"Object.spec.template.spec{{containers: [{', '.join(containers)}]}}"
    label_text = ", ".join(f'"{k}": {v}' for k, v in labels.items())
    spec.append(f"template: Object.spec.template{{spec: {template_spec}}}")
    return f"Object{{metadata: Object.metadata{{labels: {{{label_text}}}}}, spec: Object.spec{{{', '.join(spec)}}}}}"


@pytest.mark.parametrize("semantics", SEMANTICS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expression=well_typed_deployment_configuration())
def test_random_well_typed_apply_configurations_are_never_refused(semantics: str, expression: str) -> None:
    mutation = applyconfig(expression)
    if semantics == "MutatingAdmissionPolicy":
        policy = map_policy(mutation, group="apps", resource="deployments")
    else:
        policy = mpol("typed", mutation, resources="deployments").replace("apiGroups: ['']", "apiGroups: ['apps']")
    result = admit(engine(policy), base_object("deployments"))
    assert result.allowed, result.message


def test_the_go_field_order_names_fields_of_the_bundled_schemas() -> None:
    """tools/go_field_order.py's table is read against the bundled schemas: every field it names is a
    field of its struct in the schemas it was generated from and, where the struct still exists, in
    the newest bundled ones (else the table is stale and must be generated again)."""
    for version in ("1.36.0", None):
        definitions = bundled_definitions(version)
        for name, fields in GO_FIELD_ORDER.items():
            assert name in definitions or version is None, name
            if name in definitions:
                assert set(fields) <= set(definitions[name].get("properties") or {}), (version, name)
