"""Installing celmut in a cluster: the CustomResourceDefinitions and the plain install manifests.

Everything here is data built in Python: :mod:`celmut.install.crds` (the CRDs of every kind celmut
reads, written to ``crds/`` and into the Helm chart by ``make crds``) and
:mod:`celmut.install.manifests` (what ``celmut manifests`` prints: the chart's default install
without Helm). The Helm chart in ``charts/celmut`` renders the same objects; tests keep them equal.
"""
