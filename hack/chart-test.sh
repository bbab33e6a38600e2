#!/usr/bin/env bash
# Checks the Helm chart: lint, the generated CRD and ClusterRole match config/, and what
# `helm template` renders (or refuses) for the values users set. `make chart-test` runs it with
# HELM pointing at the pinned Helm; every failed check is reported, then the script exits 1.
set -uo pipefail

cd "$(dirname "$0")/.."
HELM=${HELM:-helm}
chart=charts/sts-operator
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1" >&2; failures=$((failures + 1)); }

# render NAME ARGS...: helm template into $tmp/NAME.yaml; returns helm's status.
render() {
  local name=$1
  shift
  "$HELM" template sts "$chart" --namespace sts-system "$@" >"$tmp/$name.yaml" 2>"$tmp/$name.err"
}

# has FILE PATTERN: the rendered FILE contains a line matching the extended regex PATTERN.
has() { grep -Eq -- "$2" "$tmp/$1.yaml"; }

# 1. Lint, strict: warnings fail too.
if "$HELM" lint --strict "$chart" >"$tmp/lint.out" 2>&1; then
  pass "helm lint --strict"
else
  cat "$tmp/lint.out" >&2
  fail "helm lint --strict"
fi

# 2. The chart's CRD and ClusterRole are what hack/chart-sync.sh makes from config/ now.
mkdir -p "$tmp/sync"
if ! hack/chart-sync.sh "$tmp/sync"; then
  fail "hack/chart-sync.sh could not run"
else
  drift=0
  for f in "$tmp"/sync/*.yaml; do
    if ! diff -u "$chart/templates/$(basename "$f")" "$f" >"$tmp/drift.diff" 2>&1; then
      cat "$tmp/drift.diff" >&2
      drift=1
    fi
  done
  for f in "$chart"/templates/crd-*.yaml; do
    [ -e "$tmp/sync/$(basename "$f")" ] || { echo "$f has no CRD in config/crd/bases" >&2; drift=1; }
  done
  if [ "$drift" = 0 ]; then
    pass "chart CRD and ClusterRole match config/ (make helm)"
  else
    fail "chart templates drifted from config/crd/bases or config/rbac/role.yaml: run 'make helm'"
  fi
fi

# 3. Defaults: the CRD with the keep policy, and a hardened Deployment.
if render default; then
  pass "helm template with default values"
  has default '^kind: CustomResourceDefinition$' && has default '^  name: simpletableservers\.sts\.tableserver\.dev$' \
    && pass "renders the SimpleTableServer CRD" || fail "default render lacks the SimpleTableServer CRD"
  has default 'helm\.sh/resource-policy: keep' \
    && pass "CRD keeps on uninstall (crds.keep)" || fail "CRD lacks helm.sh/resource-policy: keep"
  for kind in ServiceAccount ClusterRole ClusterRoleBinding Role RoleBinding Service Deployment; do
    has default "^kind: $kind\$" || fail "default render lacks a $kind"
  done
else
  cat "$tmp/default.err" >&2
  fail "helm template with default values"
fi

if render deployment --show-only templates/deployment.yaml; then
  for field in \
    'runAsNonRoot: true' \
    'readOnlyRootFilesystem: true' \
    'allowPrivilegeEscalation: false' \
    'privileged: false' \
    'type: RuntimeDefault' \
    '- ALL' \
    '- --leader-elect' \
    'path: /healthz' \
    'path: /readyz' \
    'memory: 256Mi' \
    'name: STS_IMAGE'; do
    grep -Fq -- "$field" "$tmp/deployment.yaml" || fail "Deployment lacks '$field'"
  done
  # The table servers run from the operator's own image unless tableServer.image says otherwise.
  image=$(grep -m1 -E '^ +image: ' "$tmp/deployment.yaml" | sed -E 's/.*image: "?([^"]*)"?/\1/')
  sts_image=$(grep -A1 'name: STS_IMAGE' "$tmp/deployment.yaml" | sed -nE 's/.*value: "?([^"]*)"?/\1/p')
  [ -n "$image" ] && [ "$image" = "$sts_image" ] \
    && pass "hardened Deployment; STS_IMAGE = operator image ($image)" \
    || fail "STS_IMAGE '$sts_image' is not the operator image '$image'"
else
  cat "$tmp/deployment.err" >&2
  fail "helm template --show-only templates/deployment.yaml"
fi

# 4. Values that switch parts on and off.
render nocrd --set crds.install=false && ! has nocrd 'kind: CustomResourceDefinition' \
  && pass "crds.install=false renders no CRD" || fail "crds.install=false still renders a CRD (or failed)"
render nokeep --set crds.keep=false && has nokeep '^kind: CustomResourceDefinition$' && ! has nokeep 'resource-policy' \
  && pass "crds.keep=false drops the keep policy" || fail "crds.keep=false still keeps the CRD (or failed)"
render stsimage --set tableServer.image=registry.example/sts:1.2.3 --show-only templates/deployment.yaml \
  && grep -A1 'name: STS_IMAGE' "$tmp/stsimage.yaml" | grep -Fq 'registry.example/sts:1.2.3' \
  && pass "tableServer.image reaches STS_IMAGE" || fail "tableServer.image does not reach STS_IMAGE"
render monitoring --set metrics.serviceMonitor.enabled=true --set networkPolicy.enabled=true \
  && has monitoring '^kind: ServiceMonitor$' && has monitoring '^kind: NetworkPolicy$' \
  && pass "ServiceMonitor and NetworkPolicy render when enabled" || fail "ServiceMonitor or NetworkPolicy missing when enabled"
render plain && ! has plain '^kind: (ServiceMonitor|NetworkPolicy)$' \
  && pass "ServiceMonitor and NetworkPolicy are off by default" || fail "ServiceMonitor or NetworkPolicy rendered by default"
# The table servers' monitoring (monitoring.*): each switch renders its object, none by default.
render monitoring-all --set monitoring.podMonitor.enabled=true --set monitoring.prometheusRule.enabled=true \
  --set monitoring.dashboard.enabled=true --set monitoring.podMonitor.labels.release=prometheus \
  --set monitoring.dashboard.annotations.grafana_folder=Load --show-only templates/monitoring.yaml \
  && has monitoring-all '^kind: PodMonitor$' && has monitoring-all '^kind: PrometheusRule$' && has monitoring-all '^kind: ConfigMap$' \
  && pass "monitoring.{podMonitor,prometheusRule,dashboard}.enabled render PodMonitor, PrometheusRule, dashboard ConfigMap" \
  || { cat "$tmp/monitoring-all.err" >&2; fail "a monitoring switch did not render its object"; }
render monitoring-none && ! has monitoring-none '^kind: (PodMonitor|PrometheusRule)$' && ! has monitoring-none 'grafana_dashboard' \
  && pass "monitoring is off by default" || fail "monitoring objects rendered by default (or the render failed)"
# The PodMonitor selects every table-server pod but those with a token of their own, sets the
# labels the dashboard and the alerts use, and sends no token unless told.
sed -n '/^kind: PodMonitor$/,/^---$/p' "$tmp/monitoring-all.yaml" >"$tmp/podmonitor.yaml"
for field in 'app.kubernetes.io/name: simpletableserver' 'app.kubernetes.io/managed-by: sts-operator' \
  'key: sts.tableserver.dev/metrics-token' 'port: http' 'path: /metrics' 'replacement: simpletableserver' \
  'sourceLabels: [__meta_kubernetes_pod_label_app_kubernetes_io_instance]' 'targetLabel: simpletableserver' \
  'release: prometheus' 'any: true'; do
  grep -Fq -- "$field" "$tmp/podmonitor.yaml" || fail "PodMonitor lacks '$field'"
done
! grep -q 'authorization' "$tmp/podmonitor.yaml" && pass "PodMonitor: table-server selector and labels; no token by default" \
  || fail "PodMonitor sends a token although monitoring.podMonitor.tokenSecret.name is empty"
render podmonitor-token --set monitoring.podMonitor.enabled=true --set monitoring.podMonitor.tokenSecret.name=sts-metrics \
  --set monitoring.podMonitor.tokenSecret.key=tok --set 'monitoring.podMonitor.namespaceSelector.any=null' \
  --set 'monitoring.podMonitor.namespaceSelector.matchNames={load}' --show-only templates/monitoring.yaml \
  && grep -A4 'authorization:' "$tmp/podmonitor-token.yaml" | tr -d ' \n' | grep -Fq 'authorization:type:Bearercredentials:name:sts-metricskey:tok' \
  && grep -A1 'matchNames:' "$tmp/podmonitor-token.yaml" | grep -Fq -- '- load' \
  && pass "monitoring.podMonitor.tokenSecret sends the Secret's token; namespaceSelector.matchNames" \
  || { cat "$tmp/podmonitor-token.err" "$tmp/podmonitor-token.yaml" >&2; fail "monitoring.podMonitor.tokenSecret or matchNames misrendered"; }
# The PrometheusRule's spec is rules.yaml and the ConfigMap's dashboard is dashboard.json, line for
# line (trailing blank lines aside): what promtool and the Go tests checked is what Prometheus and
# Grafana get.
sed -n '/^kind: PrometheusRule$/,/^---$/p' "$tmp/monitoring-all.yaml" | sed -n '/^spec:$/,$p' | sed '1d; /^---$/d; s/^  //' \
  | awk 'NF { for (; blank > 0; blank--) print ""; print; next } { blank++ }' | diff -u "$chart/monitoring/rules.yaml" - >"$tmp/rules.diff" \
  && pass "the PrometheusRule's spec is monitoring/rules.yaml" || { cat "$tmp/rules.diff" >&2; fail "the PrometheusRule's spec differs from monitoring/rules.yaml"; }
sed -n '/^kind: ConfigMap$/,/^---$/p' "$tmp/monitoring-all.yaml" | sed -n '/^  sts-operator.json: |-$/,$p' | sed '1d; /^---$/d; s/^    //' \
  | awk 'NF { for (; blank > 0; blank--) print ""; print; next } { blank++ }' | diff -u "$chart/monitoring/dashboard.json" - >"$tmp/dashboard.diff" \
  && sed -n '/^kind: ConfigMap$/,/^data:$/p' "$tmp/monitoring-all.yaml" | grep -Fq 'grafana_dashboard: "1"' \
  && sed -n '/^kind: ConfigMap$/,/^data:$/p' "$tmp/monitoring-all.yaml" | grep -Fq 'grafana_folder: Load' \
  && pass "the dashboard ConfigMap holds monitoring/dashboard.json, labelled grafana_dashboard: \"1\"" \
  || { cat "$tmp/dashboard.diff" >&2; fail "the dashboard ConfigMap differs from monitoring/dashboard.json or lacks its label"; }
render dashboard-ns --set monitoring.dashboard.enabled=true --set monitoring.dashboard.namespace=grafana --show-only templates/monitoring.yaml \
  && grep -Fq 'namespace: grafana' "$tmp/dashboard-ns.yaml" \
  && pass "monitoring.dashboard.namespace places the ConfigMap" || fail "monitoring.dashboard.namespace is not the ConfigMap's"
# tableServer.defaultRedis becomes --default-redis=<JSON> (the manager decodes it strictly), and
# only when set.
! grep -Fq -- '--default-redis' "$tmp/deployment.yaml" \
  && pass "no --default-redis by default" || fail "--default-redis rendered although tableServer.defaultRedis is empty"
cat >"$tmp/redis-values.yaml" <<'VALUES'
tableServer:
  defaultRedis:
    sentinel:
      masterName: mymaster
      addresses: [sentinel-0.redis.svc:26379, sentinel-1.redis.svc:26379]
    database: 2
    credentialsSecret: {name: redis, usernameKey: username}
    tls: {enabled: true, caSecret: {name: redis-ca, key: ca.crt}}
VALUES
want='--default-redis={"credentialsSecret":{"name":"redis","usernameKey":"username"},"database":2,"sentinel":{"addresses":["sentinel-0.redis.svc:26379","sentinel-1.redis.svc:26379"],"masterName":"mymaster"},"tls":{"caSecret":{"key":"ca.crt","name":"redis-ca"},"enabled":true}}'
if render defaultredis -f "$tmp/redis-values.yaml" --show-only templates/deployment.yaml; then
  # The argument as the container gets it: the YAML double-quoted scalar decoded (its escapes
  # are JSON's).
  got=$(sed -nE 's/^ +- ("--default-redis=.*")$/\1/p' "$tmp/defaultredis.yaml" | python3 -c 'import json, sys; print(json.loads(sys.stdin.read()))' 2>&1) || true
  [ "$got" = "$want" ] && pass "tableServer.defaultRedis renders --default-redis with its JSON" \
    || fail "tableServer.defaultRedis rendered '$got', want '$want'"
else
  cat "$tmp/defaultredis.err" >&2
  fail "tableServer.defaultRedis (a sentinel with credentials and TLS) did not render"
fi
render defaultredis-address --set tableServer.defaultRedis.address=redis.redis.svc:6379 --show-only templates/deployment.yaml \
  && grep -Fq -- '- "--default-redis={\"address\":\"redis.redis.svc:6379\"}"' "$tmp/defaultredis-address.yaml" \
  && pass "tableServer.defaultRedis.address alone renders" || fail "tableServer.defaultRedis.address alone misrendered"
render norbac --set rbac.create=false --set rbac.aggregateToDefaultRoles=false --set serviceAccount.create=false --set serviceAccount.name=existing \
  && ! has norbac '^kind: (ClusterRole|ClusterRoleBinding|Role|RoleBinding|ServiceAccount)$' && has norbac 'serviceAccountName: existing' \
  && pass "rbac.create=false and an existing ServiceAccount" || fail "rbac.create=false or serviceAccount.name misrendered"

# 5. Bad values are refused with a message.
refuse() {
  local what=$1 expect=$2
  shift 2
  if render refused "$@"; then
    fail "$what was accepted"
  elif ! grep -Eq -- "$expect" "$tmp/refused.err"; then
    cat "$tmp/refused.err" >&2
    fail "$what was refused without saying '$expect'"
  else
    pass "$what is refused"
  fi
}
refuse 'replicaCount: "two"' "replicaCount.*want integer" --set replicaCount=two
refuse 'crds.install: "maybe"' "crds/install.*want boolean" --set crds.install=maybe
refuse 'image.pullPolicy: Sometimes' "pullPolicy" --set image.pullPolicy=Sometimes
refuse 'an unknown value (replicas)' "replicas" --set replicas=2
refuse 'metrics.port 8081 (the probe port)' "metrics/port" --set metrics.port=8081
refuse 'replicaCount 3 without leader election' "needs leaderElection" --set replicaCount=3 --set leaderElection.enabled=false
dr=tableServer.defaultRedis
refuse 'defaultRedis with both address and sentinel' "defaultRedis/sentinel'?: false schema" \
  --set $dr.address=redis:6379 --set $dr.sentinel.masterName=mymaster --set "$dr.sentinel.addresses={sentinel:26379}"
refuse 'defaultRedis with neither address nor sentinel' "missing property 'address'" --set $dr.database=1
refuse 'defaultRedis with a misspelt key (adress)' "additional properties 'adress' not allowed" --set $dr.adress=redis:6379
refuse 'defaultRedis.credentialsSecret with a misspelt key' "additional properties 'passwordkey' not allowed" \
  --set $dr.address=redis:6379 --set $dr.credentialsSecret.name=redis --set $dr.credentialsSecret.passwordkey=pw
refuse 'defaultRedis.address without a port' "defaultRedis/address'?: 'redis' does not match pattern" --set $dr.address=redis
refuse 'defaultRedis.database 16' "defaultRedis/database'?: .*maximum" --set $dr.address=redis:6379 --set $dr.database=16
refuse 'defaultRedis.cluster with database 1' "defaultRedis/database'?: value must be 0" \
  --set $dr.address=redis:6379 --set $dr.cluster=true --set $dr.database=1
refuse 'monitoring.podMonitor.interval: fast' "podMonitor/interval'?: 'fast' does not match pattern" --set monitoring.podMonitor.interval=fast
refuse 'monitoring.podMonitor.namespaceSelector.any: false' "namespaceSelector/any'?: value must be true" \
  --set monitoring.podMonitor.namespaceSelector.any=false
refuse 'monitoring.podMonitor.tokenSecret with a key "a/b"' "tokenSecret/key'?: 'a/b' does not match pattern" \
  --set monitoring.podMonitor.tokenSecret.name=t --set monitoring.podMonitor.tokenSecret.key=a/b
refuse 'monitoring.prometheusRule with a misspelt key (enable)' "additional properties 'enable' not allowed" \
  --set monitoring.prometheusRule.enable=true
refuse 'monitoring.dashboard.enabled: "yes"' "dashboard/enabled'?: got string, want boolean" --set-string monitoring.dashboard.enabled=yes
refuse 'defaultRedis.tls.caSecret without tls.enabled' "defaultRedis/tls/enabled'?: value must be true" \
  --set $dr.address=redis:6379 --set $dr.tls.enabled=false --set $dr.tls.caSecret.name=ca --set $dr.tls.caSecret.key=ca.crt

tsd=tableServerDefaults
refuse 'watchNamespaces with a name that is no namespace (Team_A)' "watchNamespaces/0'?: 'Team_A' does not match pattern" --set 'watchNamespaces={Team_A}'
refuse 'watchNamespaces naming one twice' "watchNamespaces'?: items at 0 and 1 are equal" --set 'watchNamespaces={a,a}'
refuse 'tableServerDefaults with a misspelt key (nodeSelectors)' "additional properties 'nodeSelectors' not allowed" --set $tsd.nodeSelectors.pool=load
refuse 'tableServerDefaults.resources.limits.memory: lots' "limits/memory'?: 'lots' does not match pattern" --set $tsd.resources.limits.memory=lots
refuse 'tableServerDefaults.imagePullPolicy: Sometimes' "imagePullPolicy'?: value must be one of" --set $tsd.imagePullPolicy=Sometimes
refuse 'tableServerDefaults.service.type: ExternalName' "service/type'?: value must be one of" --set $tsd.service.type=ExternalName
refuse 'tableServerDefaults.podLabels taking the selector' "podLabels'?: 'allOf' failed" --set "$tsd.podLabels.app\\.kubernetes\\.io/instance=x"
refuse 'metrics.readers without a namespace' "readers/0'?: missing property 'namespace'" --set 'metrics.readers[0].name=prometheus'
refuse 'metrics.secure: "no"' "metrics/secure'?: got string, want boolean" --set-string metrics.secure=no

# 6. NOTES.txt renders and says what to apply next.
if "$HELM" install sts "$chart" --namespace sts-system --dry-run=client >"$tmp/notes.out" 2>&1 \
  && grep -q 'kind: SimpleTableServer' "$tmp/notes.out" && grep -q 'kubectl get stserver' "$tmp/notes.out"; then
  pass "NOTES.txt tells what to apply next"
else
  cat "$tmp/notes.out" >&2
  fail "NOTES.txt did not render with the next steps"
fi

# 7. README.md's table of chart values names every value: each top-level key, and each key one
# level down except inside the Kubernetes structures passed through as they are (`a.b` or, after
# `a.x`, the shorthand `.b`; `a.b.c` documents `a` and `a.b`).
undocumented=$(awk '
  /^[a-zA-Z]+:/ { top = $1; sub(/:.*/, "", top); print top; next }
  /^  [a-zA-Z]+:/ && top !~ /^(resources|podSecurityContext|securityContext)$/ {
    key = $1; sub(/:.*/, "", key); print top "." key }' "$chart/values.yaml" |
  while read -r key; do
    grep -qE '^\| .*(`'"$key"'[`.]|`\.'"${key#*.}"'`)' README.md || echo "$key"
  done)
if [ -z "$undocumented" ]; then
  pass "README.md documents every chart value"
else
  fail "README.md's chart values table lacks: $(echo $undocumented)"
fi

if [ "$failures" -gt 0 ]; then
  echo "chart-test: $failures check(s) failed" >&2
  exit 1
fi
echo "chart-test: all checks passed"
