"""A trigger wave meeting the controller's pass: every pod written once, none read.

A mutateExisting policy triggered by Namespaces whose targets are all Pods: the start-up pass lists the
pods a page at a time (a paginated list is one snapshot: kube-apiserver serves every ``continue`` page at
the first page's resourceVersion) and patches each with the copy it listed. Namespaces changed while that
pass runs queue a second pass over every pod. Its listing must not hand the workers copies older than the
first pass's writes: such a PATCH pins a resourceVersion that is no longer stored, the API server answers
409, and the pod is read again only to find nothing left to change. Counted through the fake API server,
which answers stale resourceVersions with 409 as kube-apiserver does
(tests/fakekube_tests/test_core.py ``test_a_json_patch_pinning_a_stale_resource_version_...``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from celmut.controller.reconcile import TargetKey, Task
from celmut.controller.run import Controller
from celmut.runtime.mutate_existing import Target
from tests.fakekube import FakeApiServer
from tests.fakekube.server import Hold
from tests.kube.conftest import eventually

from .support import running, write_policies
from .test_controller_scale import NAMESPACES, label_pods, patched, seed

PODS_PER_NAMESPACE = 40
PAGE = 10  # the queue holds two pages: 20 pods waiting when the pass lists its last page


def pod_requests(server: FakeApiServer, method: str) -> int:
    """Requests on one pod (``/pods/<name>``), not lists or watches."""
    return len(server.requests_matching(method, r"/pods/[^/]+$"))


def test_a_trigger_wave_meeting_the_start_up_pass_writes_each_pod_once_and_reads_none(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    seed(fake_apiserver, PODS_PER_NAMESPACE)
    pods = PODS_PER_NAMESPACE * len(NAMESPACES)
    policies = write_policies(tmp_path / "policies", label_pods("one"))
    fake_apiserver.clear_requests()
    writes = fake_apiserver.hold("PATCH", r"/pods/")  # the pass starts, its writes wait: it cannot finish
    with writes, running(fake_apiserver, tmp_path, policies, workers=2, page_size=PAGE) as controller:
        eventually(lambda: writes.waiting == 2, timeout=30, what="both workers writing")
        eventually(lambda: controller.queue.depth() >= 2 * PAGE, timeout=30, what="the pass waiting for room")
        for name in NAMESPACES:  # the wave: each namespace changed while the pass runs
            namespace = fake_apiserver.store.get("namespaces", name)
            namespace["metadata"]["labels"] = {"wave": "1"}
            fake_apiserver.store.update(namespace)
        eventually(lambda: controller.sweeper.pending() == 1, timeout=30, what="the wave's pass waiting")
        writes.release()
        eventually(lambda: patched(fake_apiserver, "one") == pods, timeout=120, what="every pod patched")
        eventually(controller.idle, timeout=60, what="the wave's pass done")
        assert controller.reconciler.conflicts == 0
    assert pod_requests(fake_apiserver, "PATCH") == pods  # one write per pod: no stale copy written
    assert pod_requests(fake_apiserver, "GET") == 0  # and none read again after a 409


def hold_the_pass(server: FakeApiServer, tmp_path: Path) -> tuple[Hold, AbstractContextManager[Controller]]:
    """The start-up pass under way with its writes held: the first two pods (bank/web-0000, -0001) being
    written, the next ones waiting in the queue (two pages: bank/web-0002 to -0021 at least)."""
    seed(server, PODS_PER_NAMESPACE)
    policies = write_policies(tmp_path / "policies", label_pods("one"))
    server.clear_requests()
    writes = server.hold("PATCH", r"/pods/")
    return writes, running(server, tmp_path, policies, workers=2, page_size=PAGE)


def wait_for_the_held_pass(writes: Hold, controller: Controller) -> None:
    eventually(lambda: writes.waiting == 2, timeout=30, what="both workers writing")
    eventually(lambda: controller.queue.depth() >= 2 * PAGE, timeout=30, what="the pass waiting for room")


def test_a_pod_changed_while_it_waits_in_the_queue_is_patched_in_the_version_the_watch_delivered(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Another writer changes a queued pod: its worker starts from the version the pods watch delivered
    (whole), not from the listed copy — no 409, no read, and the other writer's change is kept."""
    writes, controller_running = hold_the_pass(fake_apiserver, tmp_path)
    with writes, controller_running as controller:
        wait_for_the_held_pass(writes, controller)
        waiting = fake_apiserver.store.get("pods", "web-0010", "bank")
        waiting["metadata"]["labels"]["owner"] = "someone-else"
        fake_apiserver.store.update(waiting)
        # a pod created after it: once the watch delivered this one, it delivered (and handled) that change
        spec = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
        fake_apiserver.store.create(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "z", "namespace": "blog"}, "spec": spec}
        )
        cache = controller.caches.cache("v1", "pods", wait=False)
        eventually(lambda: cache is not None and cache.get("blog", "z") is not None, timeout=30, what="the watch")
        writes.release()
        eventually(lambda: patched(fake_apiserver, "one") == PODS_PER_NAMESPACE * 3, timeout=120, what="patched")
        eventually(controller.idle, timeout=60, what="the pass done")
        assert controller.reconciler.conflicts == 0
    labels = fake_apiserver.store.get("pods", "web-0010", "bank")["metadata"]["labels"]
    assert labels["owner"] == "someone-else" and labels["patched"] == "one"
    assert pod_requests(fake_apiserver, "GET") == 0


def test_work_queued_for_a_pod_while_it_is_written_starts_from_the_written_copy(
    fake_apiserver: FakeApiServer, tmp_path: Path
) -> None:
    """Work for a pod arrives, with the copy listed before, while the pod's PATCH is in flight: it waits for
    that pass, then starts from the copy the PATCH returned — even with the pods watch behind, so that only
    the write itself can tell — and finds nothing left to change: nothing is sent."""
    writes, controller_running = hold_the_pass(fake_apiserver, tmp_path)
    with fake_apiserver.watches_behind("pods"), writes, controller_running as controller:
        wait_for_the_held_pass(writes, controller)
        listed = fake_apiserver.store.get("pods", "web-0000", "bank")  # being written: this copy is about to age
        loaded = controller.policies.loaded
        assert loaded is not None
        (policy,) = (p for p in loaded.all.policies if p.mutate_existing)
        work = {policy.display_name: Task(policy, Target(policy, listed), obj=listed)}
        controller.enqueue(TargetKey("v1", "pods", "bank", "web-0000"), work)
        writes.release()
        eventually(lambda: patched(fake_apiserver, "one") == PODS_PER_NAMESPACE * 3, timeout=120, what="patched")
        eventually(controller.idle, timeout=60, what="the pass done")
        assert controller.reconciler.conflicts == 0
    assert pod_requests(fake_apiserver, "PATCH") == PODS_PER_NAMESPACE * 3
    assert pod_requests(fake_apiserver, "GET") == 0
