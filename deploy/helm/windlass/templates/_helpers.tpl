{{/* Labels of an object: pass (dict "root" $ "component" "server"); component may be empty. */}}
{{- define "windlass.labels" -}}
app.kubernetes.io/name: windlass
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
app.kubernetes.io/part-of: windlass
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end }}

{{/* Pod template labels: pass the component. */}}
{{- define "windlass.podLabels" -}}
app.kubernetes.io/name: windlass
app.kubernetes.io/component: {{ . }}
app.kubernetes.io/part-of: windlass
{{- end }}

{{/* Selector labels: pass the component. */}}
{{- define "windlass.selector" -}}
app.kubernetes.io/name: windlass
app.kubernetes.io/component: {{ . }}
{{- end }}

{{- define "windlass.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}

{{- define "windlass.managementNamespace" -}}
{{ .Values.managementNamespace | default .Release.Namespace }}
{{- end }}

{{/* The non-root, no-privilege security context of Windlass's pods: pass the uid. */}}
{{- define "windlass.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
fsGroup: {{ . }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "windlass.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop:
  - ALL
{{- end }}

{{/* Environment of the server and the worker. */}}
{{- define "windlass.envFrom" -}}
- configMapRef:
    name: windlass-config
- secretRef:
    name: windlass-secrets
    optional: true
{{- end }}

{{/* Extra environment: the Temporal API key from an existing Secret. */}}
{{- define "windlass.temporalEnv" -}}
{{- with .Values.temporal.apiKey.existingSecret }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.temporal.apiKey.key }}
{{- end }}
{{- end }}

{{/* The Temporal TLS Secret's mount and volume. */}}
{{- define "windlass.tlsMount" -}}
{{- if .Values.temporal.tls.existingSecret }}
- name: temporal-tls
  mountPath: /etc/windlass/temporal-tls
  readOnly: true
{{- end }}
{{- end }}
{{- define "windlass.tlsVolume" -}}
{{- with .Values.temporal.tls.existingSecret }}
- name: temporal-tls
  secret:
    secretName: {{ . }}
{{- end }}
{{- end }}

{{/* Preferred anti-affinity over nodes: pass the component. */}}
{{- define "windlass.antiAffinity" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
  - weight: 100
    podAffinityTerm:
      topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "windlass.selector" . | nindent 10 }}
{{- end }}
