"""The controller's EventRecorder against the fake API server: Kyverno's ``--omitEvents`` and
``--maxQueuedEvents`` (``pkg/event/controller.go`` ``Add``), the two modes, and the flag as the command
parses it."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import pytest

from celmut.controller import command
from celmut.kube.client import Cluster
from celmut.kube.event_recorder import AGGREGATED, EventInfo, EventRecorder
from tests.fakekube import FakeApiServer

POLICY = {"apiVersion": "policies.kyverno.io/v1beta1", "kind": "MutatingPolicy", "metadata": {"name": "p", "uid": "u"}}


def configmap(name: str, namespace: str = "shop") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace, "uid": name}}


def violation(name: str, namespace: str = "shop") -> list[EventInfo]:
    resource = configmap(name, namespace)
    return [
        EventInfo.about(resource, reason="PolicyViolation", message=f"policy p/ fail: {name}", component="c"),
        EventInfo.about(POLICY, reason="PolicyViolation", message=f"ConfigMap {name}", component="c", related=resource),
    ]


@pytest.fixture
def cluster(fake_apiserver: FakeApiServer, tmp_path: Path) -> Cluster:
    return Cluster.connect(str(fake_apiserver.kubeconfig(tmp_path / "kubeconfig")), timeout=5)


def test_omitted_reasons_and_nameless_objects_are_not_posted(fake_apiserver: FakeApiServer, cluster: Cluster) -> None:
    recorder = EventRecorder(cluster, omitted={"PolicyApplied"})
    applied = EventInfo.about(POLICY, reason="PolicyApplied", message="ok", component="c", warning=False)
    nameless = EventInfo.about({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-"}},
                               reason="PolicyViolation", message="x", component="c")  # fmt: skip
    recorder.add(applied, nameless, *violation("cm"))
    assert recorder.flush() == 2
    assert sorted(
        e["involvedObject"]["kind"] for ns in ("shop", "default") for e in fake_apiserver.store.list("events", ns)
    ) == ["ConfigMap", "MutatingPolicy"]
    recorder.add(applied, always=True)  # an eviction: whatever --omitEvents says
    assert recorder.flush() == 1


def test_past_max_queued_events_new_ones_are_dropped_and_counted(cluster: Cluster) -> None:
    results: Counter[str] = Counter()
    recorder = EventRecorder(cluster, max_queued=3, on_result=lambda reason, result: results.update([result]))
    for index in range(3):
        recorder.add(*violation(f"cm-{index}"))
    assert recorder.pending() == 3 and results["dropped"] == 3
    assert recorder.flush() == 3 and results["created"] == 3


def test_aggregated_posts_the_policys_side_folded_per_namespace(
    fake_apiserver: FakeApiServer, cluster: Cluster
) -> None:
    recorder = EventRecorder(cluster, mode=AGGREGATED)
    for index in range(5):
        recorder.add(*violation(f"cm-{index}", "shop" if index % 2 else "web"))
    recorder.flush(final=True)
    events = fake_apiserver.store.list("events", "default")
    assert sorted(e["count"] for e in events) == [2, 3] and not fake_apiserver.store.list("events", "shop")


@pytest.mark.parametrize(
    ("flag", "omitted"),
    [
        ([], {"PolicyApplied", "PolicySkipped"}),  # Kyverno's chart default
        (["--omitEvents="], set()),  # everything posted
        (["--omitEvents=PolicyViolation,PolicyApplied"], {"PolicyViolation", "PolicyApplied"}),
    ],
)
def test_the_omit_events_flag_takes_kyvernos_values(flag: list[str], omitted: set[str]) -> None:
    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers())
    assert parser.parse_args(["controller", *flag]).omit_events == omitted


def test_an_unknown_event_type_is_refused_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    command.add_parser(parser.add_subparsers())
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["controller", "--omitEvents=PolicyApplied,Mutated"])
    assert exited.value.code == 2 and "unknown event type 'Mutated'" in capsys.readouterr().err
