"""Several celmut installs on one cluster, each controller serving the policies its ``--policy-selector``
selects: what one writes for its policies — report results, generated MutatingAdmissionPolicies and
bindings — survives the other's start-up, rescans and policy changes; deleting a policy still removes
its results and its MAP (as Kyverno's background report controller drops the results of policies that
are gone: kyverno/kyverno pkg/controllers/report/background/controller.go ``reconcileReport``; and its
generator deletes a MAP only with its own policy: pkg/controllers/admissionpolicygenerator/controller.go).
Two real controllers, on one fake API server, through the real client."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from celmut.controller.report_loop import ReportingConfig
from celmut.controller.run import Controller
from tests.controller.support import add_label, configmap, policy, running
from tests.controller.test_generator import BINDINGS, MAPS, MPOL, native, stored
from tests.controller.test_kyverno_exceptions import exceptions
from tests.controller.test_policy_reports import install_report_crds, results
from tests.fakekube import FakeApiServer
from tests.kube.crds import crds_next_to_kyverno, policy_crds
from tests.waiting import eventually

Obj = dict[str, Any]


def team_policy(name: str, team: str) -> Obj:
    """A MutatingPolicy on ConfigMaps (scanned, admission on) labelled for one install's selector."""
    document = policy(name, add_label(name), admission=True, mutate_existing=False)
    document["metadata"]["labels"] = {"team": team}
    return document


def install(server: FakeApiServer, tmp_path: Path, team: str, **settings: Any) -> Any:
    """One install's controller: serving ``team=<team>`` policies, its own lease and identity."""
    (tmp_path / "none").mkdir(parents=True, exist_ok=True)
    return running(
        server,
        tmp_path,
        tmp_path / "none",
        from_cluster=True,
        policy_selector=f"team={team}",
        identity=f"celmut-{team}",
        lease_name=f"celmut-{team}-controller",
        reports=ReportingConfig(interval=0.05),
        **settings,
    )


def rescanned(*controllers: Controller) -> None:
    """A full rescan by each controller, waited for (written)."""
    for controller in controllers:
        assert controller.reports is not None
        controller.reports.scan_due()
    for controller in controllers:
        eventually(lambda c=controller: not c.reports.scan_pending(), what="the rescan")  # type: ignore[misc]


def compiled_condition(fake: FakeApiServer, name: str) -> bool:
    """Whether the policy carries the ``celmut.io/Compiled`` condition its install writes."""
    conditions = ((fake.store.get(MPOL, name).get("status") or {}).get("conditionStatus") or {}).get("conditions")
    return any(c.get("type") == "celmut.io/Compiled" for c in conditions or [])


BOTH = [("pol-a", "fail", "mutation is not applied"), ("pol-b", "fail", "mutation is not applied")]


@pytest.fixture
def shared(fake_apiserver: FakeApiServer) -> Iterator[FakeApiServer]:
    install_report_crds(fake_apiserver)
    for definition in policy_crds():
        fake_apiserver.store.create(definition)
    fake_apiserver.store.create(configmap("cm"))
    fake_apiserver.store.create(team_policy("pol-a", "a"))
    fake_apiserver.store.create(team_policy("pol-b", "b"))
    yield fake_apiserver


def test_each_installs_report_results_survive_the_others_start_rescans_and_policy_changes(
    shared: FakeApiServer, tmp_path: Path
) -> None:
    fake = shared
    with ExitStack() as stack:
        b = stack.enter_context(install(fake, tmp_path / "b", "b"))
        eventually(lambda: sorted(results(fake, "cm")) == BOTH[1:], what="install b's result")
        eventually(lambda: compiled_condition(fake, "pol-b"), what="install b's condition on its policy")
        a = stack.enter_context(install(fake, tmp_path / "a", "a"))  # adopts the report b wrote
        eventually(lambda: sorted(results(fake, "cm")) == BOTH, what="both installs' results")
        assert compiled_condition(fake, "pol-b") and compiled_condition(fake, "pol-a")  # each its own, both kept
        rescanned(a, b)
        assert sorted(results(fake, "cm")) == BOTH
        changed = fake.store.get(MPOL, "pol-a")
        changed["spec"]["mutations"][0]["jsonPatch"]["expression"] = "[]"  # now it changes nothing: a pass
        fake.store.update(changed)  # a changed policy is rescanned by its install: its results rewritten
        eventually(lambda: ("pol-a", "pass") in [r[:2] for r in results(fake, "cm")], what="the change scanned")
        rescanned(a, b)
        assert sorted(r[:2] for r in results(fake, "cm")) == [("pol-a", "pass"), ("pol-b", "fail")]
        fake.store.delete(MPOL, "pol-a")  # deleted: its results go, whichever install served it
        eventually(lambda: sorted(results(fake, "cm")) == BOTH[1:], what="pol-a's results removed")
        rescanned(a, b)
        assert sorted(results(fake, "cm")) == BOTH[1:]


def test_a_restarted_install_keeps_the_other_installs_results(shared: FakeApiServer, tmp_path: Path) -> None:
    """The start-up this bug was found at: install a restarts while b's results are stored."""
    fake = shared
    with install(fake, tmp_path / "b", "b"), install(fake, tmp_path / "a", "a"):
        eventually(lambda: sorted(results(fake, "cm")) == BOTH, what="both installs' results")
    with install(fake, tmp_path / "a2", "a") as a:
        rescanned(a)
        assert sorted(results(fake, "cm")) == BOTH


def generated(fake: FakeApiServer, name: str) -> bool:
    return stored(fake, MAPS, f"mpol-{name}") is not None and stored(fake, BINDINGS, f"mpol-{name}-binding") is not None


def uids(fake: FakeApiServer, name: str) -> tuple[str, str]:
    """The uids of a policy's generated MAP and binding (a deletion and re-creation changes them)."""
    found = stored(fake, MAPS, f"mpol-{name}"), stored(fake, BINDINGS, f"mpol-{name}-binding")
    return tuple(str((obj or {}).get("metadata", {}).get("uid")) for obj in found)  # type: ignore[return-value]


CHANGED = '[JSONPatch{op: "add", path: "/metadata/labels/changed", value: "yes"}]'


def native_for(name: str, team: str) -> Obj:
    document = native(name)
    document["metadata"]["labels"] = {"team": team}
    return document


def test_each_installs_generated_maps_survive_the_others_start_and_reloads(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake = fake_apiserver
    for definition in policy_crds():
        fake.store.create(definition)
    fake.store.create(native_for("team-a", "a"))
    fake.store.create(native_for("team-b", "b"))
    with install(fake, tmp_path / "b", "b"):
        eventually(lambda: generated(fake, "team-b"), what="install b's MAP")
        b_objects = uids(fake, "team-b")
        with install(fake, tmp_path / "a", "a"):
            eventually(lambda: generated(fake, "team-a"), what="install a's MAP")
            a_objects = uids(fake, "team-a")
            for name in ("team-b", "team-a"):  # each install rewrites its own MAP; both installs reload
                changed = fake.store.get(MPOL, name)
                changed["spec"]["mutations"][0]["jsonPatch"]["expression"] = CHANGED
                fake.store.update(changed)
                eventually(
                    lambda n=name: (
                        (stored(fake, MAPS, f"mpol-{n}") or {}).get("spec", {}).get("mutations", [{}])[0]
                        == {"patchType": "JSONPatch", "jsonPatch": {"expression": CHANGED}}
                    ),
                    what=f"{name}'s MAP rewritten",
                )
            # never deleted (and generated again by its install): the very objects, both installs' own
            assert (uids(fake, "team-a"), uids(fake, "team-b")) == (a_objects, b_objects)
            condition_of_b = (fake.store.get(MPOL, "team-b").get("status") or {}).get("conditionStatus")
            assert condition_of_b and any(
                c["type"] == "celmut.io/MutatingAdmissionPolicy" for c in condition_of_b["conditions"]
            )
            fake.store.delete(MPOL, "team-b")  # its policy deleted: its MAP goes (no garbage collector here)
            eventually(lambda: not stored(fake, MAPS, "mpol-team-b"), what="the deleted policy's MAP removed")
            assert not stored(fake, BINDINGS, "mpol-team-b-binding")
            assert generated(fake, "team-a")


def test_next_to_kyverno_each_install_keeps_its_exceptions_and_leaves_the_others(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Installs sharing the namespace of the PolicyExceptions that make Kyverno skip their policies: each
    keeps one per policy it serves, never deletes the other's, and withdraws its own once its policy
    leaves its selector (Kyverno then serves it)."""
    fake = fake_apiserver
    for definition in crds_next_to_kyverno():
        fake.store.create(definition)
    fake.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "celmut"}})
    fake.store.create(native_for("team-a", "a"))
    fake.store.create(native_for("team-b", "b"))
    with (
        install(fake, tmp_path / "b", "b", kyverno_exceptions_namespace="celmut"),
        install(fake, tmp_path / "a", "a", kyverno_exceptions_namespace="celmut"),
    ):
        both = {"celmut-mpol-team-a", "celmut-mpol-team-b"}
        eventually(lambda: set(exceptions(fake)) == both, what="both installs' exceptions")
        b_exception = exceptions(fake)["celmut-mpol-team-b"]["metadata"]["uid"]
        fake.store.patch(MPOL, "team-a", {"metadata": {"labels": {"team": "kyverno"}}})
        eventually(lambda: set(exceptions(fake)) == {"celmut-mpol-team-b"}, what="a's exception withdrawn")
        assert exceptions(fake)["celmut-mpol-team-b"]["metadata"]["uid"] == b_exception


def test_a_policy_relabelled_out_of_its_installs_selector_loses_that_installs_condition(
    shared: FakeApiServer, tmp_path: Path
) -> None:
    """The install that served a policy takes its ``celmut.io/Compiled`` condition back when the policy leaves
    its selector (no install may serve it now: a condition left behind would say it is served); the other
    install's policy keeps its own."""
    fake = shared
    with install(fake, tmp_path / "a", "a"), install(fake, tmp_path / "b", "b"):
        eventually(lambda: compiled_condition(fake, "pol-a") and compiled_condition(fake, "pol-b"), what="both")
        relabelled = fake.store.get(MPOL, "pol-a")
        relabelled["metadata"]["labels"] = {"team": "nobody"}
        fake.store.update(relabelled)
        eventually(lambda: not compiled_condition(fake, "pol-a"), what="install a's condition taken back")
        assert compiled_condition(fake, "pol-b")
