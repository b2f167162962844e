"""Kyverno's chainsaw tests against a real API server (a development control plane, possibly shared), with
celmut's webhook and controller in the loop — what CI's fake API server cannot show. CI does not run it (it
needs the control plane): ``make chainsaw-real`` does, and so does the opt-in
``test_kyverno_real_cluster.py``; ``test_real_harness.py`` runs the harness itself against the fake in CI.

    KUBECONFIG=... python -m tests.chainsaw.real_cluster [--pki DIR] [CASE ...]   # default: every case

Every case the fake API server runs (``tests/chainsaw/test_kyverno_reporting.py`` and
``test_kyverno_existing.py``) runs here the same way, with the same declared skips, skipped operations,
expected failures and refusals, each against a celmut of its own (:mod:`tests.chainsaw.real_celmut`: the
webhook served on 127.0.0.1 with TLS, its configurations registered by the controller) scoped to the
run's label (:mod:`tests.chainsaw.shared_cluster`). ``--pki``: the directory of the control plane's
``webhook.crt``/``webhook.key`` (serving 127.0.0.1) and ``ca.crt`` (default
``$KUBE_RIG_HOME/kube/pki``). After each case, what it created is deleted and waited for (as chainsaw
does), then celmut's configurations and ClusterRoles, and the Events and ClusterPolicyReports about the
case's objects that would outlive it; the policy and report CRDs are installed if missing and removed at
the end only if this run installed them and nothing of theirs is left.

Prints one line per case as it ends — passed, xfail (failed where and as the fake run declares), failed
(where), skipped (why) — then the table of each case's verdict on the fake API server (as declared) and here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kubernetes.client
import kubernetes.config
import yaml
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import NotFoundError

from tests.chainsaw import test_kyverno_existing as existing
from tests.chainsaw import test_kyverno_reporting as reporting
from tests.chainsaw.cases import namespace_for
from tests.chainsaw.real_celmut import Pki, real_celmut
from tests.chainsaw.runner import CHAINSAW, Run
from tests.chainsaw.shared_cluster import RunScope

ROOT = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]
CRD_FILES = ("policies.kyverno.io_", "wgpolicyk8s.io_")

#: Cases that pass on the fake API server and fail here at one known assertion, because of what this rig
#: lacks (a kubelet, a scheduler...) or what a real cluster does that the fake does not: (where, why). Failing
#: anywhere else, or not failing, is a failure (fixing the rig or celmut must update this table).
REAL_ONLY: dict[str, tuple[str, str]] = {}


@dataclass(frozen=True)
class Declared:
    """What the fake run of a case declares (its test module's tables)."""

    skipped: str = ""
    expected_failure: tuple[str, str] | None = None  # where, why
    skipped_operations: dict[str, str] = field(default_factory=dict)
    refusal: str | None = None
    real_only: tuple[str, str] | None = None  # where, why it fails on a real cluster only

    @property
    def on_fake(self) -> str:
        return "skipped" if self.skipped else "xfail" if self.expected_failure else "passed"

    @property
    def expected_here(self) -> tuple[str, str] | None:
        """Where and why the case fails on a real cluster (the fake's declaration unless the rig's overrides)."""
        return self.real_only or self.expected_failure


def declared() -> dict[str, Declared]:
    """Every case, with what its test module declares."""
    out: dict[str, Declared] = {}
    for case in reporting.CASES:
        out[case] = Declared(
            reporting.SKIPPED.get(case, ""),
            reporting.EXPECTED_FAILURES.get(case),
            reporting.SKIPPED_OPERATIONS.get(case, {}),
            real_only=REAL_ONLY.get(case),
        )
    for case in existing.CASES:
        out[case] = Declared(
            existing.SKIPPED.get(case, ""),
            existing.EXPECTED_FAILURES.get(case),
            refusal=existing.REFUSALS.get(case),
            real_only=REAL_ONLY.get(case),
        )
    return out


# --- the policy and report CRDs --------------------------------------------------------------------


def ensure_crds(client: DynamicClient) -> list[str]:
    """Install celmut's copies of the policy and report CRDs that are missing; the names installed."""
    crds = client.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    installed = []
    for path in sorted((ROOT / "crds").glob("*.yaml")):
        if path.name.startswith(CRD_FILES):
            definition = yaml.safe_load(path.read_text())
            try:
                crds.get(name=definition["metadata"]["name"])
            except NotFoundError:
                crds.create(body=definition)
                installed.append(definition["metadata"]["name"])
    for name in installed:  # established: served
        deadline = time.monotonic() + 30
        while not any(
            c.type == "Established" and c.status == "True" for c in crds.get(name=name).status.conditions or []
        ):
            assert time.monotonic() < deadline, f"CRD {name} not established"
            time.sleep(0.2)
    return installed


def remove_crds(client: DynamicClient, names: list[str]) -> list[str]:
    """Delete the CRDs this run installed that hold no object (someone else may use them since); the kept."""
    crds = client.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    kept = []
    for name in names:
        spec = crds.get(name=name).spec
        version = next(v.name for v in spec.versions if v.served)
        items = client.resources.get(api_version=f"{spec.group}/{version}", kind=spec.names.kind).get().items
        if items:
            kept.append(name)
        else:
            crds.delete(name=name)
    return kept


# --- one case --------------------------------------------------------------------------------------


def verdict(case: str, run: Run, declaration: Declared) -> tuple[str, str]:
    """Run the case and judge it as the fake run does: (passed | xfail | failed, detail)."""
    try:
        run.run()
    except AssertionError as ex:
        text = str(ex)
        expected = declaration.expected_here
        if expected and text.startswith(expected[0]):
            return "xfail", expected[1]
        return "failed", text.splitlines()[0] + " | " + "; ".join(text.splitlines()[1:4])
    if declaration.refusal is not None:
        refused = [e.split(": ", 1)[1] for e in run.errors]
        if refused != [declaration.refusal]:
            return "failed", f"refusals {refused}, expected [{declaration.refusal!r}]"
    if declaration.expected_here:
        return "failed", f"passed, where it is declared to fail at {declaration.expected_here[0]!r}"
    return "passed", "; ".join(run.notes)


def run_case(case: str, client: DynamicClient, kubeconfig: Path, pki: Pki, scope: RunScope) -> tuple[str, str]:
    declaration = declared().get(case, Declared())
    if declaration.skipped:
        return "skipped", declaration.skipped
    others = scope.others_celmut()
    if others:
        return "failed", (
            f"shared cluster: another celmut's objects are on the cluster ({', '.join(others[:3])}"
            f"{', ...' if len(others) > 3 else ''}), which a celmut of this run would take over: not run now"
        )
    scope.next_case()
    namespace = namespace_for(case, "celmut-chainsaw-")
    outlived: set[str] = {"default"}
    try:
        with real_celmut(client, kubeconfig, pki, scope) as celmut:
            run = Run(CHAINSAW / case, celmut, namespace=namespace, kubeconfig=kubeconfig)
            run.skipped_operations.update(declaration.skipped_operations)
            run.prepare = scope.prepare
            _guard(run, scope)
            try:
                own = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
                scope.prepare(own)
                client.resources.get(api_version="v1", kind="Namespace").create(body=own)
                run.created.append(("v1", "Namespace", namespace, None))
                scope.written(own, None)
                outcome = verdict(case, run, declaration)
            except Exception as ex:  # the case's failure (a refused foreign object, an API error); the run goes on
                outcome = (
                    "failed",
                    f"{type(ex).__name__}: {ex}".splitlines()[0] + "\n" + traceback.format_exc(limit=4),
                )
            finally:
                created_namespaces = {name for _, kind, name, _ns in run.created if kind == "Namespace"}
                outlived |= {ns for _, _kind, _name, ns in run.created if ns and ns not in created_namespaces}
                run.cleanup()
    finally:  # celmut stopped: no Event is written after these are removed
        scope.remove_events(outlived)
        scope.remove_cluster_reports()
    return outcome


def _guard(run: Run, scope: RunScope) -> None:
    """The run's writes remember what they wrote; its deletes never reach an object that is not the run's."""
    write, delete = run._write, run._delete

    def written(verb: str, document: Obj) -> None:
        write(verb, document)
        scope.written(document, run._namespace_of(run._resource(document), document))

    def deleted(document: Obj) -> None:
        namespace = run._namespace_of(run._resource(document), document)
        scope.refuse_foreign({**document, "metadata": {**document["metadata"], "namespace": namespace}})
        delete(document)

    run._write = written  # type: ignore[method-assign]
    run._delete = deleted  # type: ignore[method-assign]


# --- the run ---------------------------------------------------------------------------------------


def reachable(kubeconfig: str | None) -> str:
    """'' when ``kubeconfig`` names a file whose API server answers, else why not."""
    if not kubeconfig or not Path(kubeconfig).is_file():
        return f"KUBECONFIG {kubeconfig!r} is not a file" if kubeconfig else "no KUBECONFIG"
    try:
        with kubernetes.config.new_client_from_config(kubeconfig) as api:
            kubernetes.client.VersionApi(api).get_code(_request_timeout=5)
    except Exception as ex:  # any failure to reach it is the answer
        return f"the API server of {kubeconfig} does not answer: {type(ex).__name__}"
    return ""


@dataclass
class RealRun:
    """A run on the API server of ``kubeconfig``: its client, label and the control plane's certificates."""

    kubeconfig: Path
    pki: Pki
    client: DynamicClient
    scope: RunScope

    def case(self, case: str) -> tuple[str, str]:
        """Run ``case``: (passed | xfail | failed | skipped, detail)."""
        return run_case(case, self.client, self.kubeconfig, self.pki, self.scope)


@contextlib.contextmanager
def real_run(kubeconfig: Path, pki_dir: Path) -> Iterator[RealRun]:
    """The policy and report CRDs installed where missing (removed afterwards if this run installed them and
    nothing of theirs is left), and a run label."""
    api = kubernetes.config.new_client_from_config(str(kubeconfig))
    client = DynamicClient(api)
    installed = ensure_crds(client)
    try:
        yield RealRun(kubeconfig, Pki.of(pki_dir), client, RunScope(client))
    finally:
        kept = remove_crds(client, installed)
        if kept:
            print(f"CRDs kept (objects of them exist): {', '.join(kept)}")
        api.close()


def default_pki() -> Path:
    """The development control plane's certificates (``$KUBE_RIG_HOME/kube/pki``)."""
    return Path(os.environ.get("KUBE_RIG_HOME", Path.home() / ".cache" / "kube-rig")) / "kube" / "pki"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chainsaw.real_cluster", description=__doc__.split("\n")[0])
    parser.add_argument("--pki", type=Path, default=default_pki(), help="webhook.crt, webhook.key, ca.crt")
    parser.add_argument("cases", nargs="*", help="cases (folders under the chainsaw tests); default: all")
    args = parser.parse_args(argv)
    declarations = declared()
    cases = args.cases or sorted(declarations)
    unknown = [c for c in cases if c not in declarations]
    if unknown:
        parser.error(f"not a stored case: {', '.join(unknown)}")
    why_not = reachable(os.environ.get("KUBECONFIG"))
    if why_not:
        parser.error(why_not)
    results: list[tuple[str, str, str]] = []
    with real_run(Path(os.environ["KUBECONFIG"]), args.pki) as run:
        for case in cases:
            outcome, detail = run.case(case)
            results.append((case, outcome, detail))
            print(f"{outcome:7} {case}: {detail}", flush=True)
    width = max(len(c) for c, _, _ in results) if results else 4
    print(f"\n{'case':{width}}  fake     real")
    for case, outcome, _ in results:
        print(f"{case:{width}}  {declarations[case].on_fake:7}  {outcome}")
    counts = {v: sum(1 for _, o, _ in results if o == v) for v in ("passed", "xfail", "failed", "skipped")}
    print(", ".join(f"{n} {v}" for v, n in counts.items()))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    kubernetes.client.Configuration.set_default(kubernetes.client.Configuration())
    sys.exit(main(sys.argv[1:]))
