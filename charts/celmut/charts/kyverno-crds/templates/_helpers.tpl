{{- /*
"true" when this release may render the policies.kyverno.io CRD named .name: it does not exist yet,
or this release created it (Helm's ownership annotations, as helm/helm pkg/action/validate.go
checkOwnership reads them). A CRD Kyverno installed, or took over with `helm install kyverno
--take-ownership`, is left alone: not updated, and — being annotated helm.sh/resource-policy: keep —
not deleted when it leaves this release. `helm template` (no cluster: lookup is empty) renders them all.
*/}}
{{- define "kyverno-crds.unowned-or-ours" -}}
{{- $crd := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" .name -}}
{{- if not $crd -}}
true
{{- else -}}
{{- $annotations := $crd.metadata.annotations | default dict -}}
{{- if and (eq (get $annotations "meta.helm.sh/release-name") .root.Release.Name) (eq (get $annotations "meta.helm.sh/release-namespace") .root.Release.Namespace) -}}
true
{{- end -}}
{{- end -}}
{{- end -}}
