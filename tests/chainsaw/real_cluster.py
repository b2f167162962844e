"""Kyverno's chainsaw tests against a real API server (the shared v1.36 control plane of development), with
celmut's controller in this process — what CI's fake API server cannot show. Not part of the test suite.

    KUBECONFIG=... python -m tests.chainsaw.real_cluster [CASE ...]   # default: events-violation and existing/*

The controller runs as the chart runs it (``--from-cluster``, reports, Events, default flags), except that it
serves only the policies this run labels (``--policy-selector celmut-chainsaw=<run>``): the cluster is shared,
so every object a test writes gets that label, and every MutatingPolicy an objectSelector for it in its match
and target constraints (declared adjustments, printed): nothing of anyone else's is scanned, reported on or
touched. No webhook is registered: the cases run here are the controller's (mutateExisting,
background scans, Events). A namespace a test creates gets a ``default`` ServiceAccount when the control
plane has no controller-manager to make one (pods need it). What a case created is deleted after it, as
chainsaw does; the policy and report CRDs are installed if missing and removed at the end only if this run
installed them and nothing of theirs is left. Prints one line per case: passed, failed (where), skipped.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.config
import yaml
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

from celmut.controller.report_loop import ReportingConfig
from celmut.controller.run import Controller, ControllerConfig
from celmut.kube.client import Cluster
from celmut.service.settings import ServiceSettings
from tests.chainsaw.cases import namespace_for
from tests.chainsaw.runner import CHAINSAW, Run
from tests.chainsaw.test_kyverno_existing import CASES as EXISTING
from tests.chainsaw.test_kyverno_existing import SKIPPED

ROOT = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]
DEFAULT_CASES = ["mutating-policies/reporting/events-violation", *EXISTING]
POLICY_KINDS = ("MutatingPolicy", "NamespacedMutatingPolicy")


class RealCluster:
    """The API server and the in-process controller, waited on as :class:`CelmutCluster` waits on the fake."""

    def __init__(self, client: DynamicClient, controller: Controller, selector: tuple[str, str]) -> None:
        self.client = client
        self.controller = controller
        self.selector = selector

    def _stored_policies(self) -> set[str]:
        key, value = self.selector
        names: set[str] = set()
        for kind in POLICY_KINDS:
            resource = self.client.resources.get(api_version="policies.kyverno.io/v1", kind=kind)
            for item in resource.get(label_selector=f"{key}={value}").items:
                names.add(item.metadata.name)
        return names

    def settle(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        quiet = 0
        why = ""
        while quiet < 2:
            assert time.monotonic() < deadline, f"celmut did not settle: {why}"
            loaded = self.controller.policies.loaded
            served = {p.name for p in loaded.all.policies} if loaded is not None else set()
            events = self.controller.events
            pending = events.pending() if events is not None else 0
            why = (
                f"idle={self.controller.idle()} events pending={pending} "
                f"stored={sorted(self._stored_policies())} served={sorted(served)}"
            )
            busy = not self.controller.idle() or pending > 0
            if busy or not self._stored_policies() <= served:
                quiet = 0
                time.sleep(0.1)
                continue
            reports = self.controller.reports
            writes = reports.pass_once().writes if reports is not None else 0
            quiet = quiet + 1 if writes == 0 else 0
            time.sleep(0.2)  # watches of a real API server deliver a little later


def _prepare(client: DynamicClient, selector: tuple[str, str]) -> Any:
    key, value = selector

    def prepare(document: Obj) -> str | None:
        document.setdefault("metadata", {}).setdefault("labels", {})[key] = value
        if document.get("kind") == "Namespace":
            _service_account_after(client, document)
        if document.get("kind") not in POLICY_KINDS:
            return f"shared cluster: every object a test writes labelled {key}={value}"
        spec = document.setdefault("spec", {})
        for field in ("matchConstraints", "targetMatchConstraints"):
            constraints = spec.get(field)
            if isinstance(constraints, dict) and constraints.get("resourceRules"):
                selector = constraints.setdefault("objectSelector", {})
                selector.setdefault("matchExpressions", []).append({"key": key, "operator": "In", "values": [value]})
        return (
            f"shared cluster: the run's controller serves only the policies labelled {key}={value}, their "
            f"match/targetMatchConstraints limited to objects labelled so (never anyone else's objects)"
        )

    return prepare


def _service_account_after(client: DynamicClient, namespace: Obj) -> None:
    """No controller-manager, no ``default`` ServiceAccount: one is made right after the namespace is written
    (``run_case`` calls what is queued here after each write)."""
    name = namespace["metadata"]["name"]
    accounts = client.resources.get(api_version="v1", kind="ServiceAccount")

    def make() -> None:
        for _ in range(50):
            try:
                accounts.get(name="default", namespace=name)
                return
            except NotFoundError:
                pass
            with contextlib.suppress(Exception):
                accounts.create(body={"metadata": {"name": "default"}}, namespace=name)
                return
            time.sleep(0.1)

    _after_write.append(make)


_after_write: list[Any] = []


def _ensure_crds(client: DynamicClient) -> list[str]:
    crds = client.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    installed = []
    for path in sorted((ROOT / "crds").glob("*.yaml")):
        if not path.name.startswith(("policies.kyverno.io_", "wgpolicyk8s.io_")):
            continue
        definition = yaml.safe_load(path.read_text())
        try:
            crds.get(name=definition["metadata"]["name"])
        except NotFoundError:
            crds.create(body=definition)
            installed.append(definition["metadata"]["name"])
    time.sleep(2 if installed else 0)  # established
    return installed


def _remove_crds(client: DynamicClient, names: list[str]) -> None:
    crds = client.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    for name in names:
        spec = crds.get(name=name).spec
        version = next(v.name for v in spec.versions if v.served)
        items = client.resources.get(api_version=f"{spec.group}/{version}", kind=spec.names.kind).get().items
        if not items:
            crds.delete(name=name)


def run_case(case: str, client: DynamicClient, cluster: RealCluster, kubeconfig: Path, prepare: Any) -> tuple[str, str]:
    if case in SKIPPED:
        return "skipped", SKIPPED[case]
    run = Run(CHAINSAW / case, cluster, namespace=namespace_for(case, "celmut-chainsaw-"), kubeconfig=kubeconfig)
    run.prepare = prepare
    own = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": run.namespace}}
    prepare(own)
    client.resources.get(api_version="v1", kind="Namespace").create(body=own)
    while _after_write:
        _after_write.pop()()
    original = run._write

    def write(verb: str, document: Obj) -> None:
        original(verb, document)
        while _after_write:
            _after_write.pop()()

    run._write = write  # type: ignore[method-assign]
    try:
        run.run()
        outcome = ("passed", "; ".join(run.notes))
    except AssertionError as ex:
        outcome = ("failed", str(ex).splitlines()[0] + " | " + "; ".join(str(ex).splitlines()[1:3]))
    except Exception as ex:  # reported as the case's failure; the run goes on
        outcome = ("failed", f"{type(ex).__name__}: {ex}".splitlines()[0] + "\n" + traceback.format_exc(limit=3))
    finally:
        _own_policies.update(name for _, kind, name, _ns in run.created if kind in POLICY_KINDS)
        run.cleanup()
    return outcome


_own_policies: set[str] = set()


def _remove_policy_events(client: DynamicClient) -> None:
    """The Events about the run's cluster-wide policies live in ``default``, which outlives the cases."""
    events = client.resources.get(api_version="v1", kind="Event")
    for event in events.get(namespace="default").items:
        involved = event.involvedObject
        if involved.kind in POLICY_KINDS and involved.name in _own_policies:
            with contextlib.suppress(NotFoundError):
                events.delete(name=event.metadata.name, namespace="default")


def main(argv: list[str]) -> int:
    cases = argv or DEFAULT_CASES
    kubeconfig = Path(os.environ["KUBECONFIG"])
    api = kubernetes.config.new_client_from_config(str(kubeconfig))
    client = DynamicClient(api)
    installed = _ensure_crds(client)
    selector = ("celmut-chainsaw", uuid.uuid4().hex[:8])
    cluster_client = Cluster.connect(str(kubeconfig), timeout=30)
    service = ServiceSettings(from_cluster=True, policy_selector=f"{selector[0]}={selector[1]}")
    config = ControllerConfig(service, reports=ReportingConfig(interval=3600), reload_interval=0.5, scan_interval=0)
    controller = Controller(config, cluster_client).start()
    results: list[tuple[str, str, str]] = []
    try:
        cluster = RealCluster(client, controller, selector)
        for case in cases:
            verdict, detail = run_case(case, client, cluster, kubeconfig, _prepare(client, selector))
            results.append((case, verdict, detail))
            print(f"{verdict:7} {case}: {detail}", flush=True)
    finally:
        controller.stop()
        cluster_client.close()
        _remove_policy_events(client)
        _remove_crds(client, installed)
    counts = {v: sum(1 for _, verdict, _ in results if verdict == v) for v in ("passed", "failed", "skipped")}
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 0 if not counts["failed"] else 1


if __name__ == "__main__":
    kubernetes.client.Configuration.set_default(kubernetes.client.Configuration())
    sys.exit(main(sys.argv[1:]))
