#!/usr/bin/env bash
# make demo: the local cluster (hack/cluster/up.sh) with the operator installed by its Helm
# chart, the sample table servers of config/samples (a ConfigMap dataset and a Secret dataset
# behind a token) in namespace sts-demo, and a load generator Job that uses them the three
# classic ways: unique logins read with KEEP=TRUE, a producer/consumer queue, and card numbers
# read with the token. Prints what to look at; `make demo-down` stops everything.
# Needs Linux and root. Environment from the Makefile: MAKE VERSION IMG IMAGE_TAR HELM.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=hack/cluster/lib.sh
source "$here/lib.sh"
: "${MAKE:?run through make demo}" "${VERSION:?}" "${IMG:?}" "${IMAGE_TAR:?}" "${HELM:?}"
require_root_linux
# Its Debian packages first, before the long builds start (the same as up.sh's: the cluster's).
"$repo/hack/debian-deps.sh" demo
started=$SECONDS
ns=sts-demo
trap 'status=$?; ((status == 0)) || stop_builds' EXIT
export KUBECONFIG=$LOCAL_KUBECONFIG

start_builds
"$here/up.sh"
wait_builds
"$here/build.sh"
"$here/load-image.sh" "$repo/$IMAGE_TAR" "$CLUSTER_BIN/stsload.tar"
install_operator "$IMG" "$repo/$IMAGE_TAR"

log "applying the samples (config/samples) in namespace $ns"
kubectl_ create namespace "$ns" --dry-run=client -o yaml | kubectl_ apply -f - >/dev/null
kubectl_ apply -n "$ns" -f "$repo/config/samples/sts_v1alpha1_simpletableserver.yaml" \
	-f "$repo/config/samples/sts_v1alpha1_simpletableserver_secret.yaml" >/dev/null
kubectl_ wait -n "$ns" --for condition=Ready simpletableserver/logins simpletableserver/payments --timeout 3m >/dev/null

log "starting the load generator (Job loadgen)"
svc() { echo "http://$1.$ns.svc:9191"; }
# A Job's pods cannot be changed: a second make demo starts a new one.
kubectl_ delete job loadgen -n "$ns" --ignore-not-found --wait >/dev/null
kubectl_ create -n "$ns" -f - >/dev/null <<EOF
apiVersion: batch/v1
kind: Job
metadata:
  name: loadgen
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      automountServiceAccountToken: false
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      volumes:
        - name: token
          secret: {secretName: payments-sts-token, items: [{key: token, path: token}]}
      containers:
        # Unique logins: each virtual user takes a random login and puts it back (KEEP=TRUE).
        - name: logins
          image: $(cat "$CLUSTER_BIN/stsload.tar.tag")
          args: [consume, -url, "$(svc logins)", -list, logins.csv, -mode, RANDOM, -keep, -rate, "5", -report, 30s]
        # A queue: orders are added LAST and taken FIRST, consumed once; it grows by 2 a second.
        - name: producer
          image: $(cat "$CLUSTER_BIN/stsload.tar.tag")
          args: [produce, -url, "$(svc logins)", -list, orders.csv, -prefix, order, -count, "1000000", -rate, "4", -report, 30s]
        - name: consumer
          image: $(cat "$CLUSTER_BIN/stsload.tar.tag")
          args: [consume, -url, "$(svc logins)", -list, orders.csv, -rate, "2", -idle, 24h, -report, 30s]
        # Card numbers from a Secret, behind the server's bearer token.
        - name: cards
          image: $(cat "$CLUSTER_BIN/stsload.tar.tag")
          args: [consume, -url, "$(svc payments)", -list, cards.csv, -keep, -rate, "1", -token-file, /token/token, -report, 30s]
          volumeMounts: [{name: token, mountPath: /token, readOnly: true}]
EOF
kubectl_ wait -n "$ns" --for condition=Ready pod -l batch.kubernetes.io/job-name=loadgen --timeout 2m >/dev/null
log "letting it run for 15 seconds, so that the status shows the queue"
sleep 15

k="$KUBECTL"
cat <<EOF

The demo runs ($((SECONDS - started))s). Use the local cluster with:

  export KUBECONFIG=$LOCAL_KUBECONFIG
  alias kubectl=$k

Table servers and their live line counts (refreshed every 10 s; add -w to watch):

  \$ kubectl get simpletableservers -n $ns
$(kubectl_ get simpletableservers -n "$ns" | sed 's/^/  /')

  \$ kubectl get simpletableserver logins -n $ns -o jsonpath='{.status.lists}'
  $(kubectl_ get simpletableserver logins -n "$ns" -o jsonpath='{.status.lists}')

A READ through the Service, from your machine through the API server's proxy: the plugin's HTML,
as JMeter gets it (add &FORMAT=JSON for the JSON form). Pods call $(svc logins)/sts/READ?FILENAME=logins.csv:

  \$ kubectl get --raw '/api/v1/namespaces/$ns/services/logins:9191/proxy/sts/READ?FILENAME=logins.csv'
  $(kubectl_ get --raw "/api/v1/namespaces/$ns/services/logins:9191/proxy/sts/READ?FILENAME=logins.csv")

What the load generator does:

  kubectl logs -n $ns job/loadgen --all-containers --prefix

Stop the demo and the local cluster:

  make demo-down
EOF
