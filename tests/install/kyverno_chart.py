"""A chart shaped like Kyverno's own, for the lifecycle tests: the other release next to celmut's.

Read from kyverno/kyverno ``charts/kyverno``: the CRDs are *templates* of the ``crds`` subchart
(``charts/kyverno/charts/crds/templates/policies.kyverno.io/*.yaml``, each behind
``.Values.groups.policies.<plural>``), enabled by ``crds.install``; they carry ``kyverno.crds.labels``
(``charts/kyverno/charts/crds/templates/_helpers.tpl``: helm.sh/chart, app.kubernetes.io/managed-by,
version, part-of, instance, component=crds, from ``charts/kyverno/templates/_helpers/_labels.tpl``),
the subchart's ``annotations`` value and ``controller-gen.kubebuilder.io/version``, and no
``helm.sh/resource-policy``: ``helm uninstall kyverno`` deletes them, and with them every policy.
The CRD bodies are celmut's (the schemas are parity-tested against Kyverno's) with a description of
Kyverno's, so a test sees whether anyone rewrote Kyverno's CRD.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.kube.crds import crd, spec_of

KINDS = {
    "MutatingPolicy": "mutatingpolicies",
    "NamespacedMutatingPolicy": "namespacedmutatingpolicies",
    "PolicyException": "policyexceptions",
}
KYVERNO_DESCRIPTION = "Kyverno's own schema (kyverno/kyverno charts/kyverno/charts/crds)."

PARENT_HELPERS = """{{- define "kyverno.labels.merge" -}}
{{- $labels := dict -}}
{{- range . -}}
  {{- $labels = merge $labels (fromYaml .) -}}
{{- end -}}
{{- with $labels -}}
  {{- toYaml $labels -}}
{{- end -}}
{{- end -}}
{{- define "kyverno.name" -}}kyverno{{- end -}}
{{- define "kyverno.fullname" -}}kyverno{{- end -}}
{{- define "kyverno.chart" -}}{{ .Chart.Name }}-{{ .Chart.Version }}{{- end -}}
{{- define "kyverno.chartVersion" -}}{{ .Chart.Version }}{{- end -}}
{{- define "kyverno.labels.helm" -}}
{{- if not .Values.templating.enabled -}}
helm.sh/chart: {{ template "kyverno.chart" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
{{- end -}}
{{- define "kyverno.labels.version" -}}
app.kubernetes.io/version: {{ template "kyverno.chartVersion" . }}
{{- end -}}
{{- define "kyverno.labels.common" -}}
{{- template "kyverno.labels.merge" (list
  (include "kyverno.labels.helm" .)
  (include "kyverno.labels.version" .)
  (toYaml .Values.customLabels)
) -}}
{{- end -}}
{{- define "kyverno.matchLabels.common" -}}
app.kubernetes.io/part-of: {{ template "kyverno.fullname" . }}
app.kubernetes.io/instance: {{ template "kyverno.name" . }}
{{- end -}}
{{- define "kyverno.labels.component" -}}
app.kubernetes.io/component: {{ . }}
{{- end -}}
"""

CRDS_HELPERS = """{{- define "kyverno.crds.labels" -}}
{{- template "kyverno.labels.merge" (list
  (include "kyverno.labels.common" .)
  (include "kyverno.crds.matchLabels" .)
  (toYaml .Values.customLabels)
) -}}
{{- end -}}
{{- define "kyverno.crds.matchLabels" -}}
{{- template "kyverno.labels.merge" (list
  (include "kyverno.matchLabels.common" .)
  (include "kyverno.labels.component" "crds")
) -}}
{{- end -}}
"""

CRD_HEADER = """{{{{- if .Values.groups.policies.{plural} }}}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  labels:
    {{{{- include "kyverno.crds.labels" . | nindent 4 }}}}
  annotations:
    {{{{- with .Values.annotations }}}}
    {{{{- toYaml . | nindent 4 }}}}
    {{{{- end }}}}
    controller-gen.kubebuilder.io/version: v0.17.2
  name: {name}
"""


def _crd_template(kind: str, plural: str) -> str:
    definition = crd(spec_of(kind))
    for version in definition["spec"]["versions"]:
        version["schema"]["openAPIV3Schema"]["description"] = KYVERNO_DESCRIPTION
    body = yaml.safe_dump({"spec": definition["spec"]}, sort_keys=False, width=120)
    return CRD_HEADER.format(plural=plural, name=definition["metadata"]["name"]) + body + "{{- end }}\n"


def write_kyverno_chart(root: Path, version: str = "3.5.0") -> Path:
    """Write the Kyverno-shaped chart under ``root``; its directory."""
    chart = root / "kyverno"
    crds = chart / "charts" / "crds"
    (crds / "templates" / "policies.kyverno.io").mkdir(parents=True, exist_ok=True)
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v2",
                "name": "kyverno",
                "version": version,
                "appVersion": "v1.15.0",
                "dependencies": [{"name": "crds", "version": version, "condition": "crds.install"}],
            }
        )
    )
    groups = {"policies": {plural: True for plural in KINDS.values()}}
    (chart / "values.yaml").write_text(
        yaml.safe_dump(
            {
                "templating": {"enabled": False},
                "customLabels": {},
                "crds": {"install": True, "groups": groups, "annotations": {}, "customLabels": {}},
                "admissionController": {"replicas": 1},
            }
        )
    )
    (chart / "templates" / "_helpers.tpl").write_text(PARENT_HELPERS)
    (chart / "templates" / "config.yaml").write_text(  # the rest of the chart, reduced to one object
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kyverno\n  namespace: {{ .Release.Namespace }}\n"
        "  labels:\n    {{- include \"kyverno.labels.common\" . | nindent 4 }}\n"
        "data:\n  replicas: {{ .Values.admissionController.replicas | quote }}\n"
    )
    (crds / "Chart.yaml").write_text(yaml.safe_dump({"apiVersion": "v2", "name": "crds", "version": version}))
    (crds / "values.yaml").write_text(
        yaml.safe_dump({"templating": {"enabled": False}, "groups": groups, "annotations": {}, "customLabels": {}})
    )
    (crds / "templates" / "_helpers.tpl").write_text(CRDS_HELPERS)
    for kind, plural in KINDS.items():
        path = crds / "templates" / "policies.kyverno.io" / f"policies.kyverno.io_{plural}.yaml"
        path.write_text(_crd_template(kind, plural))
    return chart
