"""The CRDs celmut installs but another product may own: the table the chart and ``celmut manifests`` follow.

celmut serves kinds whose CRDs other products ship too (Kyverno's ``policies.kyverno.io`` kinds; later
Kyverno's GlobalContextEntry and the Policy WG report kinds). Such a CRD holds objects celmut did not
create, so celmut must never delete it, nor rewrite it while someone else owns it, whatever the order of
installs, upgrades, rollbacks, take-overs and uninstalls. The mechanism (chosen from Helm's source):

* **Helm**: each is a *hook* of the chart (``helm.sh/hook: pre-install,pre-upgrade``), rendered only
  while the CRD is absent or still this release's (``celmut.shared-crd.writable`` in
  ``charts/celmut/templates/_helpers.tpl``, a ``lookup``). Hooks are not part of the release manifest, so
  the release diff that deletes what a new revision no longer renders (helm/helm pkg/action/upgrade.go,
  pkg/kube/client.go ``Update``), rollback (pkg/action/rollback.go) and uninstall (pkg/action/
  uninstall.go: the manifest's resources only) never see them; and Helm never deletes a CRD hook by any
  hook-delete policy (pkg/action/hooks.go ``deleteHookByPolicy``: "Never delete
  CustomResourceDefinitions"). Nothing depends on an annotation another chart may strip: the
  ``helm.sh/resource-policy: keep`` it still carries only protects an upgrade from the chart version
  that rendered these CRDs as ordinary templates. "This release's" reads Helm's own ownership
  annotations (``meta.helm.sh/release-name``/``-namespace``, which every Helm take-over re-stamps:
  pkg/action/validate.go) and ``app.kubernetes.io/part-of: celmut``: any doubt reads as someone else's.
* **kubectl**: ``celmut manifests`` prints no CRD at all; ``celmut manifests --crds`` prints them, each of
  these only while absent or created by celmut (:mod:`celmut.install.manifests`).

To add one (issue 27: ``globalcontextentries.kyverno.io``; issue 28: the ``wgpolicyk8s.io`` reports):
define the CRD in Python next to the others, add a :class:`SharedCrd` row below naming its subchart (an
existing one, or a new subchart with a ``condition`` value like ``kyvernoCrds.enabled``), run
``make crds``, and add its kind to the lifecycle matrix (tests/install/lifecycle.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SharedCrd:
    """A CRD celmut installs only while absent or its own, and never deletes."""

    name: str
    #: The product that ships it too and may take it over (shown to the user).
    owner: str
    #: The subchart of charts/celmut whose ``templates/`` holds its hook template.
    subchart: str


SHARED_CRDS: tuple[SharedCrd, ...] = (
    SharedCrd("mutatingpolicies.policies.kyverno.io", "Kyverno", "kyverno-crds"),
    SharedCrd("namespacedmutatingpolicies.policies.kyverno.io", "Kyverno", "kyverno-crds"),
    SharedCrd("policyexceptions.policies.kyverno.io", "Kyverno", "kyverno-crds"),
    SharedCrd("globalcontextentries.kyverno.io", "Kyverno", "kyverno-crds"),
    # The Policy WG report kinds: Kyverno's chart ships them, and so do Policy Reporter and others.
    SharedCrd("policyreports.wgpolicyk8s.io", "Kyverno", "kyverno-crds"),
    SharedCrd("clusterpolicyreports.wgpolicyk8s.io", "Kyverno", "kyverno-crds"),
)


def shared_crd(name: str) -> SharedCrd | None:
    """The row of the CRD ``name``, or None when only celmut ships it."""
    return next((row for row in SHARED_CRDS if row.name == name), None)
