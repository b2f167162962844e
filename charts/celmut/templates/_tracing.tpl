{{/*
OpenTelemetry environment of one component, (list $ "webhook"): the standard OTEL_* variables celmut's
tracing reads (README, "Tracing"); nothing when tracing.otlpEndpoint is empty.
*/}}
{{- define "celmut.tracingEnv" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- with $root.Values.tracing -}}
{{- if .otlpEndpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .otlpEndpoint | quote }}
- name: OTEL_SERVICE_NAME
  value: celmut-{{ $component }}
- name: OTEL_TRACES_SAMPLER
  value: parentbased_traceidratio
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ .samplerRatio | quote }}
{{- with .extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
