"""The lifecycle harness: real ``helm`` (and celmut's manifests) against one fake API server, with the
user's objects stored in the CRDs, and a snapshot of who owns what after every step.

A row of the matrix is a list of :class:`Step`: a command and the state it must leave — for every CRD
celmut may install, whether it exists and which release owns it (Helm's ``meta.helm.sh/release-name``,
helm/helm pkg/action/validate.go), and which of the user's objects still exist. While Kyverno's release
owns a CRD, its content must stay exactly what Kyverno's chart wrote (nobody else rewrites it).
"""

from __future__ import annotations

import contextlib
import copy
import io
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakekube import FakeApiServer

from . import helm as helm_tool

Obj = dict[str, Any]
MPOL = "mutatingpolicies.policies.kyverno.io"
NMPOL = "namespacedmutatingpolicies.policies.kyverno.io"
PEX = "policyexceptions.policies.kyverno.io"
PODMUTATION = "podmutations.pod-mutations.cast.ai"
GPU = "gpuslicings.presets.celmut.io"
PINNING = "podpinningplans.pinning.celmut.io"
KYVERNO_CRDS = (MPOL, NMPOL, PEX)
CELMUTS_OWN = (PODMUTATION, GPU, PINNING)
ALL_CRDS = KYVERNO_CRDS + CELMUTS_OWN

#: The user's objects, one per kind, each in the CRD named: stored once the CRD exists, never by a release.
USER_OBJECTS: dict[str, Obj] = {
    MPOL: {
        "apiVersion": "policies.kyverno.io/v1beta1",
        "kind": "MutatingPolicy",
        "metadata": {"name": "add-team"},
        "spec": {"mutations": [{"patchType": "ApplyConfiguration",
                                "applyConfiguration": {"expression": "Object{}"}}]},
    },
    NMPOL: {
        "apiVersion": "policies.kyverno.io/v1beta1",
        "kind": "NamespacedMutatingPolicy",
        "metadata": {"name": "add-owner", "namespace": "apps"},
        "spec": {"mutations": [{"patchType": "ApplyConfiguration",
                                "applyConfiguration": {"expression": "Object{}"}}]},
    },
    PEX: {
        "apiVersion": "policies.kyverno.io/v1beta1",
        "kind": "PolicyException",
        "metadata": {"name": "skip-batch", "namespace": "apps"},
        "spec": {"policyRefs": [{"kind": "MutatingPolicy", "name": "add-team"}]},
    },
    PODMUTATION: {
        "apiVersion": "pod-mutations.cast.ai/v1",
        "kind": "PodMutation",
        "metadata": {"name": "spot-batch"},
        "spec": {"filter": {"workload": {"namespaces": ["apps"]}}},
    },
}
KYVERNO = "kyverno"
CELMUT = "celmut"
ABSENT = None


@dataclass(frozen=True)
class Step:
    """One command and the state it must leave: CRD -> owning release (None: absent; "" no Helm owner),
    and the user objects that must exist (by their CRD's name)."""

    what: str
    argv: tuple[str, ...]
    owners: Mapping[str, str | None]
    objects: frozenset[str]
    fails: bool = False


@dataclass
class Cluster:
    """A fake API server driven by real Helm, with the Kyverno-shaped chart at ``kyverno_chart``."""

    fake: FakeApiServer
    helm: Path
    kubeconfig: Path
    kyverno_chart: Path
    kubectl: Path | None = None
    #: Kyverno's CRDs as Kyverno's release last wrote them (name -> (labels, spec)).
    kyvernos: dict[str, Any] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    def run(self, argv: tuple[str, ...], fails: bool = False) -> str:
        """``helm <argv>``; or, for ``("manifests", ..., "|", "kubectl", ...)``, `celmut manifests ...` piped
        into the real kubectl, both against this cluster."""
        if "|" in argv:
            return self._pipe(argv, fails)
        args = [a.replace("@celmut", str(helm_tool.CHART)).replace("@kyverno", str(self.kyverno_chart)) for a in argv]
        result = subprocess.run(
            [str(self.helm), *args, "--kubeconfig", str(self.kubeconfig)], capture_output=True, text=True, timeout=120
        )
        self.log.append(f"$ helm {' '.join(argv)} -> {result.returncode}\n{result.stderr[-2000:]}")
        if fails:
            assert result.returncode != 0, f"helm {' '.join(argv)} was expected to fail"
        else:
            assert result.returncode == 0, f"helm {' '.join(argv)} failed:\n{result.stderr}"
        return result.stderr

    def _pipe(self, argv: tuple[str, ...], fails: bool) -> str:
        from celmut.main import main

        bar = argv.index("|")
        assert argv[0] == "manifests" and argv[bar + 1] == "kubectl" and self.kubectl is not None
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main([*argv[:bar], "--kubeconfig", str(self.kubeconfig)]) == 0, err.getvalue()
        result = subprocess.run(
            [str(self.kubectl), *argv[bar + 2 :], "--kubeconfig", str(self.kubeconfig)],
            input=out.getvalue(), capture_output=True, text=True, timeout=120,
        )
        self.log.append(f"$ celmut {' '.join(argv)} -> {result.returncode}\n{err.getvalue()}{result.stderr[-2000:]}")
        assert (result.returncode != 0) is fails, f"{' '.join(argv)}:\n{result.stderr}"
        return result.stderr

    def crd(self, name: str) -> Obj | None:
        store = self.fake.store
        return store.get("customresourcedefinitions", name) if store.exists("customresourcedefinitions", name) else None

    def owners(self) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        for name in ALL_CRDS:
            definition = self.crd(name)
            annotations = (definition or {}).get("metadata", {}).get("annotations") or {}
            out[name] = None if definition is None else annotations.get("meta.helm.sh/release-name", "")
        return out

    def store_user_objects(self) -> None:
        """The user creates what is missing of their objects, once its CRD is served."""
        for name, obj in USER_OBJECTS.items():
            if self.crd(name) is None:
                continue
            kind, meta = obj["kind"], obj["metadata"]
            rtype = self.fake.registry.by_kind(obj["apiVersion"], kind)
            if rtype is not None and not self.fake.store.exists(rtype, meta["name"], meta.get("namespace")):
                self.fake.store.create(copy.deepcopy(obj))

    def user_objects(self) -> frozenset[str]:
        present = set()
        for name, obj in USER_OBJECTS.items():
            rtype = self.fake.registry.by_kind(obj["apiVersion"], obj["kind"])
            meta = obj["metadata"]
            if rtype is not None and self.fake.store.exists(rtype, meta["name"], meta.get("namespace")):
                present.add(name)
        return frozenset(present)

    def remember_kyvernos(self) -> None:
        for name in KYVERNO_CRDS:
            definition = self.crd(name)
            if definition is not None and self.owners()[name] == KYVERNO:
                self.kyvernos[name] = (definition["metadata"].get("labels"), definition["spec"])

    def check(self, step: Step) -> None:
        context = (
            f"after `{step.what}`: CRD owners {self.owners()}, user objects {sorted(self.user_objects())}\n"
            + "\n".join(self.log[-3:])
        )
        assert self.owners() == dict(step.owners), context
        for name, owner in step.owners.items():  # Kyverno's CRDs are exactly as Kyverno's release wrote them
            if owner == KYVERNO and name in self.kyvernos:
                definition = self.crd(name)
                assert definition is not None
                assert (definition["metadata"].get("labels"), definition["spec"]) == self.kyvernos[name], (
                    f"{name} was rewritten; {context}"
                )
        assert self.user_objects() == step.objects, context

    def play(self, steps: list[Step]) -> None:
        for step in steps:
            self.run(step.argv, fails=step.fails)
            if any(a.startswith("@kyverno") for a in step.argv):
                self.remember_kyvernos()
            self.check(step)
            self.store_user_objects()


#: celmut's own CRDs come from the chart's ``crds/`` directory: Helm creates them on install with no release
#: metadata (helm/helm pkg/action/install.go ``installCRDs``), never upgrades or deletes them.
CRDS_DIR = ""


def owners(
    kyverno: str | None, podmutation: str | None = CRDS_DIR, own: str | None = CRDS_DIR
) -> dict[str, str | None]:
    """The expected owners: the three Kyverno CRDs, the PodMutation CRD, and GpuSlicing/PodPinningPlan."""
    return {MPOL: kyverno, NMPOL: kyverno, PEX: kyverno, PODMUTATION: podmutation, GPU: own, PINNING: own}


EVERYTHING = frozenset(USER_OBJECTS)
NO_POLICIES = frozenset({PODMUTATION})
