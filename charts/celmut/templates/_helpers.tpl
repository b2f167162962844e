{{/* Name of every object: fullnameOverride, else the release name (+ "-celmut" unless it has it). */}}
{{- define "celmut.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else if contains "celmut" .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-celmut" .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object; "component" is added where there is one. */}}
{{- define "celmut.labels" -}}
app.kubernetes.io/name: celmut
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: celmut
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: (list $ "webhook"). */}}
{{- define "celmut.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: celmut
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "celmut.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "celmut.webhookServiceAccount" -}}{{ include "celmut.fullname" . }}-webhook{{- end -}}
{{- define "celmut.controllerServiceAccount" -}}{{ include "celmut.fullname" . }}-controller{{- end -}}
{{- define "celmut.tlsSecret" -}}{{ include "celmut.fullname" . }}-tls{{- end -}}
{{- define "celmut.caSecret" -}}{{ include "celmut.fullname" . }}-ca{{- end -}}
{{- define "celmut.policiesConfigMap" -}}{{ include "celmut.fullname" . }}-policies{{- end -}}
{{- define "celmut.kyvernoExceptionsNamespace" -}}{{ .Values.kyvernoExceptions.namespace | default .Release.Namespace }}{{- end -}}

{{/* The documents of the policies ConfigMap, as a dict of file name -> YAML text. */}}
{{- define "celmut.policyFiles" -}}
{{- $files := dict -}}
{{- if .Values.staticConfig -}}
{{- $_ := set $files "spot.yaml" (toYaml (dict "celmutNamespace" .Release.Namespace "staticConfig" .Values.staticConfig)) -}}
{{- end -}}
{{- if .Values.gpuSlicing.enabled -}}
{{- $spec := dict "workloadTypes" .Values.gpuSlicing.workloadTypes "sharedResource" .Values.gpuSlicing.sharedResource -}}
{{- $doc := dict "apiVersion" "presets.celmut.io/v1alpha1" "kind" "GpuSlicing" "metadata" (dict "name" "gpu-slicing") "spec" $spec -}}
{{- $_ := set $files "gpu-slicing.yaml" (toYaml $doc) -}}
{{- end -}}
{{- toYaml $files -}}
{{- end -}}

{{/* Pod and container security settings shared by both Deployments. */}}
{{- define "celmut.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}
{{- define "celmut.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/* The HTTP allow-list of CEL's http.Get/Post, as `serve` and `controller` flags. */}}
{{- define "celmut.imageArgs" -}}
{{- with .Values.imageData }}
{{- range .registries }}
- --image-registry-allow
- {{ . | quote }}
{{- end }}
{{- range .insecureRegistries }}
- --image-registry-insecure
- {{ . | quote }}
{{- end }}
{{- if ne (toString .timeoutSeconds) "3" }}
- --image-timeout
- {{ .timeoutSeconds | quote }}
{{- end }}
{{- if ne (toString .cacheSeconds) "300" }}
- --image-cache-seconds
- {{ .cacheSeconds | quote }}
{{- end }}
{{- if ne (toString .cacheEntries) "512" }}
- --image-cache-entries
- {{ .cacheEntries | quote }}
{{- end }}
{{- if .pullSecrets }}
- --image-pull-secrets
{{- end }}
{{- end }}
{{- end -}}
{{- define "celmut.httpArgs" -}}
{{- with .Values.httpAllowList }}
{{- range .urls }}
- --http-allow
- {{ . | quote }}
{{- end }}
{{- range .networks }}
- --http-allow-network
- {{ . | quote }}
{{- end }}
{{- if .privateNetworks }}
- --http-allow-private-networks
{{- end }}
{{- if ne (toString .timeoutSeconds) "5" }}
- --http-timeout
- {{ .timeoutSeconds | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{- /*
"true" when this release may write the shared CRD named .name (celmut/install/shared_crds.py: a CRD
another product, e.g. Kyverno, may own): it does not exist, or this release made it — Helm's ownership
annotations name this release (helm/helm pkg/action/validate.go; every Helm take-over re-stamps them)
and it is labelled part-of celmut. Anything else — Kyverno's, taken over with `helm install kyverno
--take-ownership`, another celmut release's, applied by kubectl — is left alone. The templates using it
are hooks: never in the release diff, never deleted by Helm. `helm template` (no cluster): all render.
*/}}
{{- define "celmut.shared-crd.writable" -}}
{{- $crd := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" .name -}}
{{- if not $crd -}}
true
{{- else -}}
{{- $annotations := $crd.metadata.annotations | default dict -}}
{{- $labels := $crd.metadata.labels | default dict -}}
{{- if and (eq (get $annotations "meta.helm.sh/release-name") .root.Release.Name) (eq (get $annotations "meta.helm.sh/release-namespace") .root.Release.Namespace) (eq (get $labels "app.kubernetes.io/part-of") "celmut") -}}
true
{{- end -}}
{{- end -}}
{{- end -}}
