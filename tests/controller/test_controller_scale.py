"""Issue 35: the writing controller at scale, against the fake API server and the real client.

* a pass reads its targets a page at a time and patches each with the copy it listed: one PATCH per
  target, no GET before it (a copy that changed meanwhile gets the API server's 409 on its pinned
  resourceVersion, and only then is read again — the concurrent change is kept);
* its Events are one per policy and namespace, counted, not one per target;
* what it keeps does not grow with the number of targets it patched (tracemalloc).
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from celmut.controller import run
from celmut.controller.reconcile import Reconciler, TargetKey, Task
from celmut.controller.report_loop import ReportingConfig
from celmut.runtime.mutate_existing import Target
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually
from tests.waiting import HANG_SECONDS

from .support import configmap, connect, labels_of, running, write_policies

NAMESPACES = ("shop", "bank", "blog")


def label_pods(value: str, selector: dict[str, str] | None = None) -> dict[str, Any]:
    """A mutateExisting policy triggered by Namespaces whose targets are Pods (resource rules: a sweep
    lists them), adding a label; ``selector``: only the pods it matches."""
    targets: dict[str, Any] = {
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods"]}]
    }
    if selector:
        targets["objectSelector"] = {"matchLabels": selector}
    return {
        "apiVersion": "policies.kyverno.io/v1",
        "kind": "MutatingPolicy",
        "metadata": {"name": "label-pods"},
        "spec": {
            "evaluation": {"mutateExisting": {"enabled": True}},
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["namespaces"]}
                ]
            },
            "targetMatchConstraints": targets,
            "mutations": [
                {
                    "patchType": "ApplyConfiguration",
                    "applyConfiguration": {
                        "expression": f'Object{{metadata: Object.metadata{{labels: {{"patched": "{value}"}}}}}}'
                    },
                }
            ],
        },
    }


def seed(server: FakeApiServer, pods_per_namespace: int, **labels: str) -> None:
    for namespace in NAMESPACES:
        server.store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for index in range(pods_per_namespace):
            meta = {"name": f"web-{index:04d}", "namespace": namespace, "labels": {"app": "web", **labels}}
            if index % 4 == 0:
                meta["labels"]["tier"] = "a"
            spec = {"containers": [{"name": "app", "image": "nginx:1.27"}, {"name": "side", "image": "busybox"}]}
            server.store.create({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})


def patched(server: FakeApiServer, value: str) -> int:
    return sum(1 for pod in server.store.list("pods") if (pod["metadata"].get("labels") or {}).get("patched") == value)


def cached(controller: Any, value: str) -> int:
    """Pods whose patched state the controller's (metadata) cache shows: the watch caught up."""
    cache = controller.caches.cache("v1", "pods", wait=False)
    return sum(1 for pod in cache.items() if (pod["metadata"].get("labels") or {}).get("patched") == value)


def test_a_listed_copy_is_patched_without_reading_it_and_a_stale_one_is_read_again_on_the_conflict(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """The PATCH pins the listed copy's resourceVersion (kube-apiserver refuses it with 409 when the
    object changed since): no GET before it, one after a conflict, and the concurrent change kept."""
    fake_apiserver.store.create(configmap("one"))
    listed = fake_apiserver.store.get("configmaps", "one", "default")
    changed = fake_apiserver.store.get("configmaps", "one", "default")
    changed["metadata"]["labels"] = {"concurrent": "yes"}
    fake_apiserver.store.update(changed)  # after the sweep listed it: the listed copy is stale

    from celmut.compile.pipeline import compile_paths
    from celmut.controller.reconcile import LoadedPolicies
    from celmut.service.assembly import EngineSettings, assemble_engine

    from .support import add_label, policy

    engine = assemble_engine(
        compile_paths(str(write_policies(tmp_path / "p", policy("scanned", add_label("scanned"))))), EngineSettings()
    )
    (compiled,) = engine.policies
    loaded = LoadedPolicies(engine, None)

    def never_read(key: TargetKey) -> dict[str, Any] | None:
        raise AssertionError(f"{key} read before its patch")

    reconciler = Reconciler(connect(fake_apiserver, tmp_path), lambda: loaded, never_read)
    fake_apiserver.clear_requests()
    work = {compiled.display_name: Task(compiled, Target(compiled, listed), obj=listed)}
    outcome = reconciler.reconcile(TargetKey("v1", "configmaps", "default", "one"), work)
    assert outcome.action == "patched" and reconciler.conflicts == 1
    calls = [(r.method, r.path.rsplit("/", 1)[-1]) for r in fake_apiserver.requests if "configmaps" in r.path]
    assert calls == [("PATCH", "one"), ("GET", "one"), ("PATCH", "one")]  # the first PATCH got the 409
    assert labels_of(fake_apiserver, "one") == {"concurrent": "yes", "scanned": "true"}


def test_a_pass_patches_each_target_once_and_posts_one_event_per_policy_and_namespace(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    seed(fake_apiserver, 40)
    policies = write_policies(tmp_path / "policies", label_pods("one"))
    fake_apiserver.clear_requests()
    posted = {"events": "aggregated", "omit_events": frozenset()}  # PolicyApplied, folded per policy and namespace
    with running(fake_apiserver, tmp_path, policies, workers=4, page_size=25, **posted) as controller:
        eventually(lambda: patched(fake_apiserver, "one") == 120, timeout=60, what="every pod patched")
        assert controller.wait_idle(HANG_SECONDS)

        def events() -> list[dict[str, Any]]:
            return fake_apiserver.store.list("events", "default")

        eventually(lambda: sorted(e["count"] for e in events()) == [40, 40, 40], what="the counts")
    requests = fake_apiserver.requests
    assert len([r for r in requests if r.method == "PATCH" and "/pods/" in r.path]) == 120
    assert not [r for r in requests if r.method == "GET" and "/pods/" in r.path]  # no pod read before its patch
    pod_lists = [r for r in requests if r.method == "GET" and r.path.endswith("/pods") and "watch" not in r.query]
    assert pod_lists and all(r.query.get("limit") for r in pod_lists)  # listed a page at a time
    event_writes = [r for r in requests if "/events" in r.path and r.method in ("POST", "PATCH")]
    assert len([r for r in event_writes if r.method == "POST"]) == len(NAMESPACES)
    messages = sorted(e["message"] for e in events())
    assert all(m.startswith("(combined from similar events): Pod ") for m in messages), messages
    assert {e["involvedObject"]["name"] for e in events()} == {"label-pods"}


def retained_by_celmut(server: FakeApiServer) -> tracemalloc.Snapshot:
    """What celmut's code allocated and is still alive (after a collection). The fake API server runs in
    this process: its request log is emptied first (CPython reuses freed dicts without telling tracemalloc,
    so objects it keeps can count as celmut's)."""
    server.clear_requests()
    gc.collect()
    return tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, "*/celmut/*")])


def size(snapshot: tracemalloc.Snapshot) -> int:
    return sum(stat.size for stat in snapshot.statistics("filename"))


@pytest.mark.fakekube(history_size=100)  # the fake API server keeps as much in both measurements
def test_what_the_controller_keeps_does_not_grow_with_the_targets_it_patched(
    fake_apiserver: FakeApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same cluster and caches; the policy first patches a quarter of the pods, then (changed) all of
    them: what celmut holds afterwards may differ by a few bytes per target, not by the patched objects
    and outcomes of each (before issue 35: ~14 KiB per patched pod)."""
    monkeypatch.setattr(run, "RECENT_OUTCOMES", 10, raising=False)  # the last outcomes kept: a small window
    seed(fake_apiserver, 200)  # 600 pods, 150 of them tier "a"
    policies = write_policies(tmp_path / "policies", label_pods("first", {"tier": "a"}))
    off = ReportingConfig(background=False, admission=False)
    tracemalloc.start(1)
    try:
        with running(fake_apiserver, tmp_path, policies, workers=2, reports=off, scan_interval=0.0) as controller:
            eventually(lambda: cached(controller, "first") == 150, timeout=120, what="a quarter patched")
            assert controller.wait_idle(HANG_SECONDS)
            few = retained_by_celmut(fake_apiserver)
            write_policies(policies, label_pods("second"))  # now every pod: 600 patched
            eventually(lambda: cached(controller, "second") == 600, timeout=240, what="every pod patched")
            assert controller.wait_idle(HANG_SECONDS)
            many = retained_by_celmut(fake_apiserver)
    finally:
        tracemalloc.stop()
    growth = (size(many) - size(few)) / (600 - 150)
    where = "; ".join(str(stat) for stat in many.compare_to(few, "lineno")[:5])
    print(f"{growth:.0f} bytes kept per additional patched target")
    assert growth < 512, f"{growth:.0f} bytes kept per additional patched target: {where}"
