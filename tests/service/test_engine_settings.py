"""One frozen EngineSettings from the flags to the engine: every setting reaches the engine's
options without a hand-written copy, and the controller's drift engine (``narrowed``) keeps them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from celmut import cel
from celmut.compile.pipeline import compile_paths
from celmut.runtime.options import AdmissionOptions
from celmut.service.assembly import EngineSettings, assemble_engine, narrowed
from celmut.service.static_resources import StaticResources

EXAMPLES = Path(__file__).resolve().parents[2] / "policies" / "examples"
SETTINGS = EngineSettings(
    services=cel.Services(resources=StaticResources()),
    timeout_seconds=1.5,
    background_usernames=frozenset({"system:serviceaccount:celmut:celmut"}),
    max_input_bytes=1234,
    max_object_bytes=5678,
    kubernetes_version="1.33",
    opt_out=None,
    record_provenance=True,
    report_unselected=False,
)


def test_every_setting_reaches_the_engine_options() -> None:
    engine = assemble_engine(compile_paths(str(EXAMPLES)), SETTINGS)
    for setting in dataclasses.fields(EngineSettings):
        assert getattr(engine.options, setting.name) == getattr(SETTINGS, setting.name), setting.name
    assert isinstance(engine.options, AdmissionOptions)


def test_an_engine_without_a_cluster_finds_nothing_and_one_with_a_lookup_asks_it() -> None:
    """The one change assembly makes: with no resource lookup, resource.Get/List answer null
    (assembly.without_cluster); a lookup given is used as given."""
    engine = assemble_engine(compile_paths(str(EXAMPLES)), EngineSettings())
    assert engine.options.services.null_without_resources
    given = EngineSettings(services=cel.Services(resources=StaticResources()))
    assert assemble_engine(compile_paths(str(EXAMPLES)), given).options.services is given.services


def test_settings_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SETTINGS.timeout_seconds = 3.0  # type: ignore[misc]


def test_a_narrowed_engine_keeps_the_options_and_exceptions_over_fewer_policies() -> None:
    engine = assemble_engine(compile_paths(str(EXAMPLES)), SETTINGS)
    few = narrowed(engine, engine.policies[:1])
    assert few.options is engine.options and few.exceptions == engine.exceptions
    assert [p.name for p in few.policies] == [engine.policies[0].name]


LOOKS_UP = """
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: registry-from-configmap}
spec:
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  variables:
  - name: cm
    expression: resource.Get("v1", "configmaps", "kube-system", "registry")
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: Object{}
"""


@pytest.mark.parametrize(
    ("policy", "warned"),
    [(LOOKS_UP, True), (str(EXAMPLES.parents[1] / "examples" / "spot-presets" / "spot-partial.yaml"), False)],
    ids=["a policy's own lookup", "the presets' lookups (written for null)"],
)
def test_a_lookup_without_a_cluster_is_logged_unless_it_is_the_presets(
    policy: str, warned: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = Path(policy) if policy.endswith(".yaml") else tmp_path / "policy.yaml"
    if not policy.endswith(".yaml"):
        path.write_text(policy)
    with caplog.at_level("WARNING", logger="celmut.server"):
        assemble_engine(compile_paths(str(path)), EngineSettings())
    found = [r for r in caplog.records if "resource.Get and resource.List answer null" in r.getMessage()]
    assert bool(found) is warned
    if warned:
        assert found[0].__dict__["policies"] == "registry-from-configmap"
