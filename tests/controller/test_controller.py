"""The background controller end to end, through the real kubernetes client and the fake API server."""

from __future__ import annotations

import json
from pathlib import Path

from celmut.controller.reconcile import Reconciler, TargetKey, Task
from celmut.controller.run import Controller, ControllerConfig
from celmut.main import main
from celmut.runtime.mutate_existing import Target
from celmut.service.settings import ServiceSettings
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.waiting import HANG_SECONDS

from .support import add_label, cached_as_stored, configmap, connect, labels_of, policy, running, write_policies

COUNTER = (
    '[JSONPatch{op: "add", path: "/metadata/annotations", value: {"count": '
    'string(int(object.metadata.?annotations[?"count"].orValue("0")) + 1)}}]'
)


def test_existing_objects_are_mutated_when_a_policy_appears(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    for name in ("one", "two"):
        fake_apiserver.store.create(configmap(name))
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")))
    posted = {"events": "aggregated", "omit_events": frozenset()}  # PolicyApplied, folded per namespace
    with running(fake_apiserver, tmp_path, policies, **posted) as controller:
        eventually(lambda: all(labels_of(fake_apiserver, n).get("scanned") == "true" for n in ("one", "two")))

        def mutated_events() -> list[tuple[str, str, str, int]]:
            events = fake_apiserver.store.list("events", "default")
            return [(e["involvedObject"]["kind"], e["involvedObject"]["name"], e["reason"], e["count"]) for e in events]

        # one Event on the policy for the two ConfigMaps of the namespace, its count updated by the reload loop
        eventually(lambda: mutated_events() == [("MutatingPolicy", "scanned", "PolicyApplied", 2)], what="the Event")
        (event,) = fake_apiserver.store.list("events", "default")
        assert event["message"].startswith("(combined from similar events): ConfigMap default/")
        assert " is successfully mutated: scanned spec.mutations[0]: add /metadata/labels" in event["message"]
        assert event["related"]["kind"] == "ConfigMap" and event["related"]["name"] in ("one", "two")

        write_policies(policies, policy("second", add_label("second")))  # a new policy: scanned at once
        eventually(lambda: labels_of(fake_apiserver, "one").get("second") == "true", what="the new policy's scan")
        assert controller.metrics.scans.labels("policy")._value.get() >= 1


def test_nothing_is_written_when_nothing_changes(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake_apiserver.store.create(configmap("one"))
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")))
    with running(fake_apiserver, tmp_path, policies) as controller:
        eventually(lambda: labels_of(fake_apiserver, "one").get("scanned") == "true")
        # the scan lists the controller's cache: it must show the write (the echo of a write can come late;
        # a scan of the older copy tries a write the API server refuses, 409, then reads and finds no change)
        eventually(lambda: cached_as_stored(controller, fake_apiserver, "one"), what="the cache to show the write")
        assert controller.wait_idle(HANG_SECONDS)
        fake_apiserver.clear_requests()
        controller.scan(reason="again")
        assert controller.wait_idle(HANG_SECONDS)
        assert controller.scan_progress() == (1, 1)
        assert not fake_apiserver.requests_matching("PATCH")
        assert controller.report.outcomes()[0].action == "unchanged"


def test_an_admission_trigger_mutates_the_targets_of_its_expression(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    fake_apiserver.store.create(configmap("target"))
    triggered = policy(
        "follow-trigger",
        add_label("triggered-by", cel_value="request.name"),
        admission=True,
        conditions=['object.metadata.name.startsWith("trigger")'],
        target_expression='resource.Get("v1", "configmaps", object.metadata.namespace, "target")',
    )
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "policies", triggered)):
        assert "triggered-by" not in labels_of(fake_apiserver, "target")  # no trigger yet
        fake_apiserver.store.create(configmap("unrelated"))
        fake_apiserver.store.create(configmap("trigger-1"))
        eventually(lambda: labels_of(fake_apiserver, "target").get("triggered-by") == "trigger-1")
        assert "triggered-by" not in labels_of(fake_apiserver, "trigger-1")  # targets, not the trigger itself


def test_watches_survive_disconnects_and_expired_versions(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake_apiserver.store.create(configmap("target"))
    triggered = policy(
        "follow-trigger",
        add_label("triggered-by", cel_value="request.name"),
        admission=True,
        conditions=['object.metadata.name.startsWith("trigger")'],
        target_expression='resource.Get("v1", "configmaps", object.metadata.namespace, "target")',
    )
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "policies", triggered)):
        fake_apiserver.wait_for_watchers("configmaps", 1)
        fake_apiserver.drop_watches(abrupt=True)
        fake_apiserver.compact()  # resuming from the old resourceVersion gets 410 Gone: relist
        fake_apiserver.store.create(configmap("trigger-after-410"))
        eventually(lambda: labels_of(fake_apiserver, "target").get("triggered-by") == "trigger-after-410")


def test_its_own_writes_do_not_trigger_it_again(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    counter = policy("count", COUNTER, admission=True, target_expression="object")  # not idempotent on purpose
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "policies", counter)) as controller:
        fake_apiserver.wait_for_watchers("configmaps", 1)
        fake_apiserver.store.create(configmap("counter"))
        eventually(lambda: fake_apiserver.store.get("configmaps", "counter", "default")["metadata"].get("annotations"))
        # the watch delivers changes in order: once the controller has handled a later change, it has handled
        # the echo of its write (and, were that a trigger, queued the pass it causes)
        fake_apiserver.store.create(configmap("later"))
        eventually(lambda: fake_apiserver.store.get("configmaps", "later", "default")["metadata"].get("annotations"))
        assert controller.wait_idle(HANG_SECONDS)
        annotations = fake_apiserver.store.get("configmaps", "counter", "default")["metadata"]["annotations"]
        assert annotations == {"count": "1"}
        assert len(fake_apiserver.requests_matching("PATCH", r"/configmaps/counter$")) == 1


def test_a_conflicting_write_is_re_read_and_never_overwrites(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    stale = fake_apiserver.store.create(configmap("one"))
    fake_apiserver.store.patch(
        "configmaps", "one", {"metadata": {"labels": {"concurrent": "yes"}}}, namespace="default"
    )
    cluster = connect(fake_apiserver, tmp_path)
    controller = Controller(
        ControllerConfig(
            ServiceSettings(
                policy_paths=(str(write_policies(tmp_path / "p", policy("scanned", add_label("scanned")))),)
            )
        ),
        cluster,
    )
    controller.reload(force=True)
    loaded = controller._loaded
    assert loaded is not None
    (compiled,) = loaded.all.policies
    key = TargetKey("v1", "configmaps", "default", "one")
    reconciler = Reconciler(cluster, lambda: loaded, lambda _key: stale)  # evaluates on an outdated copy first
    outcome = reconciler.reconcile(key, {compiled.display_name: Task(compiled, Target(compiled, stale))})
    assert outcome.action == "patched" and reconciler.conflicts == 1
    assert labels_of(fake_apiserver, "one") == {"concurrent": "yes", "scanned": "true"}  # both changes kept
    controller.stop()


def test_dry_run_reports_the_exact_patch_and_writes_nothing(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake_apiserver.store.create(configmap("one", team="a"))
    fake_apiserver.store.create(configmap("two"))
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")))
    report = tmp_path / "report.json"
    kubeconfig = fake_apiserver.kubeconfig(tmp_path / "kubeconfig")
    fake_apiserver.clear_requests()
    code = main(
        [
            "controller",
            "--dry-run",
            "--kubeconfig",
            str(kubeconfig),
            "--policies",
            str(policies),
            "--report",
            str(report),
        ]
    )
    assert code == 0
    assert not [r for r in fake_apiserver.requests if r.method in ("POST", "PUT", "PATCH", "DELETE")]
    document = json.loads(report.read_text())
    assert document["summary"] == {"would-patch": 2}
    one = next(t for t in document["targets"] if t["target"]["name"] == "one")
    assert one["patch"] == [{"op": "add", "path": "/metadata/labels/scanned", "value": "true"}]
    assert one["changes"] == [
        {"policy": "scanned", "mutation": "spec.mutations[0].jsonPatch.expression", "patch": one["patch"]},
    ]
    two = next(t for t in document["targets"] if t["target"]["name"] == "two")
    assert two["patch"] == [{"op": "add", "path": "/metadata/labels", "value": {"scanned": "true"}}]


def test_only_the_leader_writes_and_a_standby_takes_over(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake_apiserver.store.create(configmap("one"))
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")))
    election = {
        "leader_elect": True,
        "lease_namespace": "default",
        "lease_duration": 1.0,
        "renew_deadline": 0.6,
        "retry_period": 0.1,
    }
    with (
        running(fake_apiserver, tmp_path, policies, identity="a", **election) as first,
        running(fake_apiserver, tmp_path, policies, identity="b", **election) as second,
    ):
        eventually(lambda: first.is_leader() != second.is_leader(), what="exactly one leader")
        eventually(lambda: labels_of(fake_apiserver, "one").get("scanned") == "true")
        leader, standby = (first, second) if first.is_leader() else (second, first)
        assert leader.elector is not None and standby.elector is not None
        leader.elector.stop(release=False)  # the leader dies: its lease must expire first
        assert not leader.is_leader()
        fake_apiserver.store.create(configmap("two"))
        eventually(standby.is_leader, what="the standby to take over")
        eventually(lambda: labels_of(fake_apiserver, "two").get("scanned") == "true", what="the new leader's scan")
        assert standby.metrics.scans.labels("leader")._value.get() >= 1


def test_engines_without_policies_leave_targets_alone(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    cluster = connect(fake_apiserver, tmp_path)
    reconciler = Reconciler(cluster, lambda: None, lambda _key: configmap("one"))
    assert reconciler.reconcile(TargetKey("v1", "configmaps", "default", "one"), {}).action == "idle"


def test_an_injected_conflict_is_retried_with_a_fresh_read(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    fake_apiserver.store.create(configmap("one"))
    fake_apiserver.fail_next("PATCH", r"/configmaps/one$", 409, times=2, reason="Conflict", message="injected")
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")))
    with running(fake_apiserver, tmp_path, policies) as controller:
        eventually(lambda: labels_of(fake_apiserver, "one").get("scanned") == "true")
        assert controller.reconciler.conflicts == 2
        assert len(fake_apiserver.requests_matching("GET", r"/configmaps/one$")) == 2  # re-read after each 409
        assert len(fake_apiserver.requests_matching("PATCH", r"/configmaps/one$")) == 3


def test_scan_progress_counts_the_targets_of_the_last_scan(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    for name in ("one", "two", "three"):
        fake_apiserver.store.create(configmap(name))
    policies = write_policies(tmp_path / "policies", policy("scanned", add_label("scanned")))
    with running(fake_apiserver, tmp_path, policies) as controller:
        eventually(lambda: controller.scan_progress() == (3, 3), what="the start scan to finish")
        controller.scan(reason="again")  # its targets are listed by a sweep, then counted
        eventually(lambda: controller.scan_progress()[1] == 3, what="the second scan's targets to be listed")
        eventually(lambda: controller.scan_progress() == (3, 3), what="the second scan to finish")


def test_a_deleted_trigger_mutates_the_targets_of_its_expression(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """A DELETE trigger's target expression sees the deleted object as `object`, as in Kyverno
    (pkg/background/common/resource.go GetResource reads request.oldObject for a DELETE)."""
    fake_apiserver.store.create(configmap("target"))
    fake_apiserver.store.create(configmap("trigger-1"))
    on_delete = policy(
        "follow-deletion",
        add_label("deleted", cel_value="oldObject.metadata.name"),
        rule={"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["configmaps"]},
        admission=True,
        conditions=['request.operation == "DELETE"'],  # not the start-up scan's synthetic UPDATE
        target_expression='resource.Get("v1", "configmaps", object.metadata.namespace, "target")',
    )
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "policies", on_delete)) as controller:
        assert controller.wait_idle(HANG_SECONDS)
        assert "deleted" not in labels_of(fake_apiserver, "target")
        fake_apiserver.store.delete("configmaps", "trigger-1", "default")
        eventually(lambda: labels_of(fake_apiserver, "target").get("deleted") == "trigger-1", what="the target patched")


def test_a_failing_target_expression_is_reported(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    """Never swallowed: a log line, a failed target in the report and metrics, one Warning Event on the policy."""
    broken = policy(
        "bad-targets",
        add_label("x"),
        admission=True,
        target_expression='resource.Get("v1", "configmaps", object.metadata.labels.team, "target")',
    )
    with running(fake_apiserver, tmp_path, write_policies(tmp_path / "policies", broken)) as controller:
        fake_apiserver.store.create(configmap("trigger"))  # no team label: the expression fails

        def reported() -> bool:
            return any(o.action == "failed" for o in controller.report.outcomes())

        eventually(reported, what="the failure in the report")
        (failed,) = [o for o in controller.report.outcomes() if o.action == "failed"]
        assert "spec.targetMatchConstraints.expression" in failed.message and "no such key: labels" in failed.message
        assert controller.metrics.errors._value.get() >= 1

        def events_of() -> list[dict[str, object]]:
            return [e for e in fake_apiserver.store.list("events", "default") if e["reason"] == "TargetsUnresolved"]

        eventually(events_of, what="the Warning Event")  # recorded after the report, on a loaded machine later
        events = events_of()
        assert [(e["involvedObject"]["kind"], e["involvedObject"]["name"], e["type"]) for e in events] == [
            ("MutatingPolicy", "bad-targets", "Warning")
        ]
        assert "ConfigMap default/trigger" in events[0]["message"]
