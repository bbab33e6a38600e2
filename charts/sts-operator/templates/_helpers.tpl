{{/*
sts-operator.name is the chart name, overridable with nameOverride.
*/}}
{{- define "sts-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
sts-operator.fullname names the release's objects: fullnameOverride, or the release name when it
already contains the chart name, or <release>-<chart>.
*/}}
{{- define "sts-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "sts-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sts-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sts-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "sts-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sts-operator
{{- end }}

{{- define "sts-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sts-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
sts-operator.image is the operator image reference: repository:tag, or repository@digest.
*/}}
{{- define "sts-operator.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
sts-operator.tableServerImage is the image the operator gives table-server pods: tableServer.image,
else the operator's own image (it holds /sts too).
*/}}
{{- define "sts-operator.tableServerImage" -}}
{{- .Values.tableServerDefaults.image | default .Values.tableServer.image | default (include "sts-operator.image" .) }}
{{- end }}

{{/*
sts-operator.tableServerDefaults is the JSON of --table-server-defaults: the values of
tableServerDefaults that are set, but the image (STS_IMAGE); empty when none is.
*/}}
{{- define "sts-operator.tableServerDefaults" -}}
{{- $set := dict }}
{{- range $key, $value := omit .Values.tableServerDefaults "image" }}
{{- if $value }}{{ $_ := set $set $key $value }}{{ end }}
{{- end }}
{{- if $set }}{{ toJson $set }}{{ end }}
{{- end }}

{{/*
sts-operator.metricsPort is metrics.port, or 8443 for HTTPS and 8080 for plain HTTP; and
sts-operator.metricsPortName the name of the port, which says which.
*/}}
{{- define "sts-operator.metricsPort" -}}
{{- .Values.metrics.port | default (ternary 8443 8080 .Values.metrics.secure) }}
{{- end }}

{{- define "sts-operator.metricsPortName" -}}
{{- ternary "https-metrics" "http-metrics" .Values.metrics.secure }}
{{- end }}
