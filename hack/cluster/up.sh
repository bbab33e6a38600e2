#!/usr/bin/env bash
# Brings up the local single-node Kubernetes cluster: containerd, etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet, kube-proxy and CoreDNS as host processes
# (PID files under STATE/pids), pods on a CNI bridge. Every packet stays on the machine: the node
# address is host-only, the service and pod ranges are routed into a bridge without ports, and
# forwarding out of (or into) the pod bridge is dropped. Needs Linux and root.
#
#   hack/cluster/up.sh        then: export KUBECONFIG=.cache/cluster/kubeconfig
#
# Idempotent: a running cluster is left as it is; the leftovers of a killed run are cleaned up
# first. Installs the Debian packages it needs when missing (hack/debian-deps.sh cluster:
# containerd, runc, the CNI plugins, iptables, conntrack, ...), and builds the components
# (build.sh) when they are not built yet.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=hack/cluster/lib.sh
source "$here/lib.sh"
require_root_linux
started=$SECONDS

# claim_machine records this STATE as the owner of the machine-wide names (interfaces, ports,
# /run/sts-cluster), refusing when another checkout's cluster runs.
claim_machine() {
	if [[ -f $OWNER_FILE ]]; then
		local owner
		owner=$(cat "$OWNER_FILE")
		if [[ $owner != "$STATE" ]] && any_daemon_running "$owner"; then
			die "the local cluster of $owner runs on this machine; stop it first (its make cluster-down)"
		fi
	fi
	echo "$STATE" >"$OWNER_FILE"
}

make_cert() { # NAME SUBJECT [EXTENSIONS]
	openssl ecparam -name prime256v1 -genkey -noout -out "$1.key"
	openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
	if [[ -n ${3:-} ]]; then
		openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -out "$1.crt" -extfile <(echo "$3") 2>/dev/null
	else
		openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -out "$1.crt" 2>/dev/null
	fi
	rm "$1.csr"
}

make_pki() {
	local pki=$STATE/pki
	[[ -f $pki/complete ]] && return 0
	log "creating the cluster's CA, certificates and kubeconfigs in $pki"
	rm -rf "$pki"
	mkdir -p "$pki"
	(
		cd "$pki"
		umask 077
		openssl ecparam -name prime256v1 -genkey -noout -out ca.key
		openssl req -x509 -new -key ca.key -subj /CN=sts-local-ca -days 3650 -out ca.crt
		make_cert apiserver /CN=kube-apiserver "subjectAltName=IP:$HOST_IP,IP:${SERVICE_CIDR%.0/*}.1,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
		make_cert apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client
		make_cert admin /O=system:masters/CN=sts-local-admin
		make_cert kube-controller-manager /CN=system:kube-controller-manager
		make_cert kube-scheduler /CN=system:kube-scheduler
		make_cert kube-proxy /CN=system:kube-proxy
		make_cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
		make_cert kubelet-serving "/CN=$NODE_NAME" "subjectAltName=IP:$HOST_IP,DNS:$NODE_NAME"
		make_cert coredns /CN=sts-local-coredns
		openssl ecparam -name prime256v1 -genkey -noout -out sa.key
		openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
	)
	local c
	for c in kube-controller-manager kube-scheduler kube-proxy kubelet coredns; do
		write_kubeconfig "$pki/$c.kubeconfig" "$c"
	done
	rm -f "$LOCAL_KUBECONFIG"
	touch "$pki/complete"
}

write_kubeconfig() { # FILE CERT
	local k=("$KUBECTL" config --kubeconfig "$1")
	"${k[@]}" set-cluster sts-local --server "https://$HOST_IP:$API_PORT" --certificate-authority "$STATE/pki/ca.crt" --embed-certs >/dev/null
	"${k[@]}" set-credentials "$2" --client-certificate "$STATE/pki/$2.crt" --client-key "$STATE/pki/$2.key" --embed-certs >/dev/null
	"${k[@]}" set-context sts-local --cluster sts-local --user "$2" >/dev/null
	"${k[@]}" use-context sts-local >/dev/null
}

set_sysctls() {
	if [[ ! -f $SYSCTL_SAVE ]]; then
		local k
		for k in "${SYSCTLS[@]}"; do
			echo "$k=$(cat "$(sysctl_path "$k")")"
		done >"$SYSCTL_SAVE"
	fi
	echo 1 >"$(sysctl_path net.ipv4.ip_forward)"
	echo 1 >"$(sysctl_path net.bridge.bridge-nf-call-iptables)" ||
		die "bridged pod traffic must pass iptables (br_netfilter) for Services to work"
}

setup_network() {
	ip link show "$HOST_IF" >/dev/null 2>&1 || ip link add "$HOST_IF" type bridge
	ip addr replace "$HOST_IP/32" dev "$HOST_IF"
	ip link set "$HOST_IF" up
	# Traffic to a Service or pod address that nothing answers ends here instead of leaving
	# through the default route. The pod bridge's own /24 route is more specific.
	ip route replace "$SERVICE_CIDR" dev "$HOST_IF" src "$HOST_IP"
	ip route replace "$CLUSTER_CIDR" dev "$HOST_IF" src "$HOST_IP"
	ensure_forward_rules
}

write_configs() {
	local cfg=$STATE/config pki=$STATE/pki
	mkdir -p "$cfg" "$STATE/cni/net.d" "$STATE/logs"
	cat >"$cfg/containerd.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$RUN_DIR/containerd"
[grpc]
  address = "$CONTAINERD_SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/library/$(cat "$CLUSTER_BIN/pause.tar.tag")"
  # The VM withholds CAP_SYS_RESOURCE: without this every sandbox fails in runc.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RUN_DIR/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$STATE/cni/net.d"
EOF
	cat >"$STATE/cni/net.d/10-$CNI_NETWORK.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$POD_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$STATE/cni/ipam",
        "ranges": [[{"subnet": "$POD_SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
	# Pods get the cluster DNS only: no upstream resolver exists.
	echo "nameserver $HOST_IP" >"$cfg/resolv.conf"
	cat >"$cfg/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $HOST_IP
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
clusterDNS: [$HOST_IP]
clusterDomain: cluster.local
resolvConf: $cfg/resolv.conf
podLogsDir: $STATE/pod-logs
# Imported images cannot be pulled again: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
EOF
	cat >"$cfg/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $pki/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $CLUSTER_CIDR
nodePortAddresses: [$HOST_IP/32]
bindAddress: $HOST_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
iptables: {localhostNodePorts: false}
# 0 leaves the machine's conntrack settings as they are.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
	cat >"$cfg/Corefile" <<EOF
.:53 {
    bind $HOST_IP
    errors
    health 127.0.0.1:$DNS_HEALTH_PORT
    ready 127.0.0.1:$DNS_READY_PORT
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $pki/coredns.kubeconfig
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 10
}
EOF
}

# CoreDNS reads Services and EndpointSlices as the user of its certificate.
apply_coredns_rbac() {
	kubectl_ apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "sts-local:coredns"}
rules:
  - {apiGroups: [""], resources: [endpoints, services, pods, namespaces], verbs: [list, watch]}
  - {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "sts-local:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "sts-local:coredns"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: sts-local-coredns}]
EOF
}

start_control_plane() {
	local pki=$STATE/pki
	start_daemon etcd "$K8S_BIN/etcd" --name "$NODE_NAME" --data-dir "$STATE/etcd" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster "$NODE_NAME=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --log-level warn
	wait_for etcd 60 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
	start_daemon kube-apiserver "$K8S_BIN/kube-apiserver" \
		--advertise-address "$HOST_IP" --bind-address "$HOST_IP" --secure-port "$API_PORT" \
		--etcd-servers "http://127.0.0.1:$ETCD_PORT" --service-cluster-ip-range "$SERVICE_CIDR" \
		--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged \
		--client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
		--kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
		--profiling=false
	log "waiting for kube-apiserver (half a minute on a busy machine)"
	wait_for kube-apiserver 120 curl -fsS --cacert "$pki/ca.crt" "https://$HOST_IP:$API_PORT/readyz"
	start_daemon kube-controller-manager "$K8S_BIN/kube-controller-manager" \
		--kubeconfig "$pki/kube-controller-manager.kubeconfig" \
		--authentication-kubeconfig "$pki/kube-controller-manager.kubeconfig" \
		--authorization-kubeconfig "$pki/kube-controller-manager.kubeconfig" \
		--bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
		--service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
		--allocate-node-cidrs --cluster-cidr "$CLUSTER_CIDR" --node-cidr-mask-size 24 \
		--service-cluster-ip-range "$SERVICE_CIDR"
	start_daemon kube-scheduler "$K8S_BIN/kube-scheduler" \
		--kubeconfig "$pki/kube-scheduler.kubeconfig" \
		--authentication-kubeconfig "$pki/kube-scheduler.kubeconfig" \
		--authorization-kubeconfig "$pki/kube-scheduler.kubeconfig" \
		--bind-address 127.0.0.1 --leader-elect=false
}

start_node() {
	local pki=$STATE/pki cfg=$STATE/config
	start_daemon kubelet "$K8S_BIN/kubelet" --config "$cfg/kubelet.yaml" --kubeconfig "$pki/kubelet.kubeconfig" \
		--hostname-override "$NODE_NAME" --node-ip "$HOST_IP" --root-dir "$STATE/kubelet"
	start_daemon kube-proxy "$K8S_BIN/kube-proxy" --config "$cfg/kube-proxy.yaml"
	apply_coredns_rbac
	start_daemon coredns "$CLUSTER_BIN/coredns-$COREDNS_VERSION" -conf "$cfg/Corefile"
}

explain_failure() {
	local status=$?
	((status == 0)) || log "bring-up failed: see $STATE/logs/; make cluster-down undoes what was done"
}
trap explain_failure EXIT
lock_machine
if cluster_running && kubectl_ get --raw /readyz >/dev/null 2>&1; then
	log "the local cluster is already running: export KUBECONFIG=$LOCAL_KUBECONFIG"
	exit 0
fi
claim_machine
"$repo/hack/debian-deps.sh" cluster
"$here/build.sh"
if any_daemon_running "$STATE" || [[ -d $RUN_DIR/containerd ]] || ip link show "$HOST_IF" >/dev/null 2>&1; then
	log "cleaning up what an earlier run left"
	teardown
	claim_machine
fi
make_pki
[[ -f $LOCAL_KUBECONFIG ]] || write_kubeconfig "$LOCAL_KUBECONFIG" admin
log "starting the local cluster (node $NODE_NAME at $HOST_IP; state in $STATE)"
mkdir -p "$STATE/logs"
rm -f "$STATE"/logs/*.log
set_sysctls
setup_network
write_configs
start_daemon containerd containerd --config "$STATE/config/containerd.toml"
wait_for containerd 30 ctr --address "$CONTAINERD_SOCK" version
remove_containers
ctr_ images import "$CLUSTER_BIN/pause.tar" >/dev/null
start_control_plane
start_node
log "waiting for the node to be Ready and for CoreDNS"
wait_for "node $NODE_NAME" 60 kubectl_ get node "$NODE_NAME"
kubectl_ wait --for condition=Ready "node/$NODE_NAME" --timeout 120s >/dev/null
wait_for CoreDNS 60 curl -fsS "http://127.0.0.1:$DNS_READY_PORT/ready"
wait_for "the default ServiceAccount" 60 kubectl_ get serviceaccount default
ensure_forward_rules # again: ahead of the rules kube-proxy added meanwhile
log "the local cluster is up after $((SECONDS - started))s: export KUBECONFIG=$LOCAL_KUBECONFIG (kubectl: $KUBECTL)"
