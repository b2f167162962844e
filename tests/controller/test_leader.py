"""Leader election on a Lease: one leader, takeover after the lease expires, writes stop at once."""

from __future__ import annotations

from pathlib import Path

from celmut.controller.leader import LeaderElector
from celmut.kube.client import Cluster
from tests.fakekube import FakeApiServer
from tests.kube.conftest import eventually


def elector(server: FakeApiServer, tmp_path: Path, identity: str) -> LeaderElector:
    cluster = Cluster.connect(str(server.kubeconfig(tmp_path / f"kubeconfig-{identity}")), timeout=2)
    return LeaderElector(
        cluster, "default", "celmut-controller", identity, lease_duration=1.0, renew_deadline=0.6, retry_period=0.1
    )


def holder(server: FakeApiServer) -> str:
    return str(server.store.get("leases.coordination.k8s.io", "celmut-controller", "default")["spec"]["holderIdentity"])


def test_one_candidate_leads_and_the_other_waits(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    first, second = elector(fake_apiserver, tmp_path, "a"), elector(fake_apiserver, tmp_path, "b")
    assert first.try_acquire_or_renew() and first.is_leader()
    assert not second.try_acquire_or_renew() and not second.is_leader()
    assert first.try_acquire_or_renew()  # renewing keeps it
    assert holder(fake_apiserver) == "a"


def test_a_standby_takes_over_when_the_leader_dies(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    first, second = elector(fake_apiserver, tmp_path, "a").start(), elector(fake_apiserver, tmp_path, "b").start()
    try:
        eventually(lambda: first.is_leader() != second.is_leader(), what="one leader")
        leader, standby = (first, second) if first.is_leader() else (second, first)
        leader.stop(release=False)  # dies without releasing: the standby waits out the lease
        eventually(standby.is_leader, what="the standby to take over")
        assert holder(fake_apiserver) == standby.identity
        lease = fake_apiserver.store.get("leases.coordination.k8s.io", "celmut-controller", "default")
        assert lease["spec"]["leaseTransitions"] == 1
    finally:
        first.stop()
        second.stop()


def test_a_released_lease_is_taken_at_once(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    first, second = elector(fake_apiserver, tmp_path, "a"), elector(fake_apiserver, tmp_path, "b")
    assert first.try_acquire_or_renew()
    assert not second.try_acquire_or_renew()
    first.stop(release=True)
    assert not first.is_leader()
    eventually(second.try_acquire_or_renew, what="takeover of the released lease")


def test_losing_the_lease_stops_leading_at_once(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    first = elector(fake_apiserver, tmp_path, "a")
    assert first.try_acquire_or_renew()
    fake_apiserver.store.patch(
        "leases.coordination.k8s.io", "celmut-controller", {"spec": {"holderIdentity": "intruder"}}, namespace="default"
    )
    assert not first.try_acquire_or_renew()
    assert not first.is_leader()


def test_leadership_lapses_when_renewals_fail(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    first = elector(fake_apiserver, tmp_path, "a").start()
    try:
        eventually(first.is_leader, what="leadership")
        fake_apiserver.fail_next("*", r"/leases", 500, times=None)
        eventually(lambda: not first.is_leader(), what="leadership to lapse")
    finally:
        fake_apiserver.clear_faults()
        first.stop(release=False)
