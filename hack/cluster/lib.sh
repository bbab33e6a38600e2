# shellcheck shell=bash disable=SC2034 # the settings are used by the scripts that source this
# Sourced by the hack/cluster scripts: the local cluster's settings and small helpers.
#
# One local cluster per machine: it uses fixed interface names, addresses and ports, and
# /run/sts-cluster. Its files live under STATE (git-ignored); the binaries it runs are built
# once per version into bin/ (git-ignored) by build.sh. See hack/cluster/README.md.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
# COREDNS_VERSION must match hack/cluster/coredns/go.mod.
COREDNS_VERSION=v1.15.0

K8S_BIN=$repo/bin/k8s/$K8S_VERSION # written by hack/envtest.sh
CLUSTER_BIN=$repo/bin/cluster      # coredns, pause and stsload, and their images
STATE=${CLUSTER_STATE_DIR:-$repo/.cache/cluster}
[[ $STATE == /?* ]] || { echo "CLUSTER_STATE_DIR must be an absolute path below /, not $STATE" >&2 && exit 1; }
RUN_DIR=/run/sts-cluster # sockets and runtime state of containerd (tmpfs)
OWNER_FILE=$RUN_DIR/owner # the STATE of the cluster that holds this machine's network names

NODE_NAME=sts-local
HOST_IF=stshost0 # a bridge without ports: holds the host-only node address
HOST_IP=10.250.0.1
POD_BRIDGE=stscni0
POD_SUBNET=10.244.0.0/24
CLUSTER_CIDR=10.244.0.0/16
SERVICE_CIDR=10.96.0.0/16
API_PORT=6443
ETCD_PORT=12379
ETCD_PEER_PORT=12380
DNS_HEALTH_PORT=18080
DNS_READY_PORT=18181
CNI_NETWORK=sts-local
CNI_BIN_DIR=/usr/lib/cni
RULE_COMMENT=sts-local-cluster # marks the iptables rules the cluster adds

KUBECTL=$K8S_BIN/kubectl
CONTAINERD_SOCK=$RUN_DIR/containerd.sock
LOCAL_KUBECONFIG=$STATE/kubeconfig # cluster admin

# The cluster's daemons, in start order.
DAEMONS=(containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy coredns)

log() { printf '%s cluster: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

# require_root_linux exits with an explanation where the local cluster cannot run.
require_root_linux() {
	[[ $(uname -s) == Linux ]] || die "the local cluster needs Linux (this is $(uname -s))"
	[[ $(id -u) == 0 ]] || die "the local cluster needs root: it runs containerd, a kubelet and iptables"
}

ctr_() { ctr --address "$CONTAINERD_SOCK" -n k8s.io "$@"; }
kubectl_() { "$KUBECTL" --kubeconfig "$LOCAL_KUBECONFIG" "$@"; }

# A PID file holds "<pid> <executable>": a PID is only ever signalled while /proc says it still
# runs that executable, so a PID reused after a crash is never touched.
pid_file() { echo "$STATE/pids/$1.pid"; }

# daemon_pid prints the PID of a running daemon started by these scripts, or fails.
daemon_pid() {
	local file pid exe
	file=$(pid_file "$1")
	[[ -f $file ]] || return 1
	read -r pid exe <"$file" || return 1
	[[ -n $pid && $(readlink "/proc/$pid/exe" 2>/dev/null) == "$exe" ]] || return 1
	echo "$pid"
}

# start_daemon NAME COMMAND... runs COMMAND in its own session, logging to logs/NAME.log.
start_daemon() {
	local name=$1
	shift
	if daemon_pid "$name" >/dev/null; then
		log "$name is already running"
		return 0
	fi
	mkdir -p "$STATE/pids" "$STATE/logs"
	setsid "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null 9>&- &
	local pid=$!
	echo "$pid $(readlink -f "$(command -v "$1")")" >"$(pid_file "$name")"
	log "started $name (pid $pid, log $STATE/logs/$name.log)"
}

# stop_daemons NAME... sends SIGTERM to the recorded processes, and SIGKILL to those that have
# not exited after 15 s. Only PIDs that daemon_pid vouches for are signalled.
stop_daemons() {
	local name pid pids=() names=()
	for name in "$@"; do
		if pid=$(daemon_pid "$name"); then
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
			names+=("$name")
		fi
	done
	local i deadline=$((SECONDS + 15))
	for i in "${!pids[@]}"; do
		while [[ -d /proc/${pids[i]} ]] && ((SECONDS < deadline)); do
			sleep 0.1
		done
		if [[ -d /proc/${pids[i]} ]]; then
			log "${names[i]} (pid ${pids[i]}) did not stop on SIGTERM: SIGKILL"
			kill -KILL "${pids[i]}" 2>/dev/null || true
		fi
	done
	for name in "$@"; do
		rm -f "$(pid_file "$name")"
	done
	[[ ${#names[@]} -eq 0 ]] || log "stopped ${names[*]}"
}

# wait_for WHAT SECONDS COMMAND... retries COMMAND every half second.
wait_for() {
	local what=$1 seconds=$2
	shift 2
	local deadline=$((SECONDS + seconds))
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			log "$what: not ready after ${seconds}s; see $STATE/logs/"
			return 1
		fi
		sleep 0.5
	done
}

# any_daemon_running says whether a daemon of the cluster whose state is in directory $1 runs.
any_daemon_running() {
	local STATE=$1 d
	for d in "${DAEMONS[@]}"; do
		daemon_pid "$d" >/dev/null && return 0
	done
	return 1
}

# cluster_running says whether every daemon of this STATE's cluster runs.
cluster_running() {
	local d
	for d in "${DAEMONS[@]}"; do
		daemon_pid "$d" >/dev/null || return 1
	done
}

# lock_machine serializes bring-up and teardown on this machine (file descriptor 9).
lock_machine() {
	mkdir -p "$RUN_DIR"
	exec 9>"$RUN_DIR/lock"
	flock -w 600 9 || die "another hack/cluster script holds $RUN_DIR/lock"
}

# Sysctls the cluster changes (kubelet sets the kernel.* and vm.* ones); the values found
# before are saved on tmpfs and put back by teardown.
SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom)
SYSCTL_SAVE=$RUN_DIR/sysctl.saved
sysctl_path() { echo "/proc/sys/${1//.//}"; }

# The two FORWARD rules keep pod traffic on the machine: a packet may be forwarded only from
# the pod bridge back into it (pod to pod, pod to a Service's pod). Traffic between pods and
# the host (API server, DNS) is never forwarded.
forward_rules() {
	iptables -w "$1" FORWARD "${@:2}" -i "$POD_BRIDGE" ! -o "$POD_BRIDGE" -m comment --comment "$RULE_COMMENT" -j DROP &&
		iptables -w "$1" FORWARD "${@:2}" ! -i "$POD_BRIDGE" -o "$POD_BRIDGE" -m comment --comment "$RULE_COMMENT" -j DROP
}
remove_forward_rules() {
	command -v iptables >/dev/null || return 0
	while forward_rules -D 2>/dev/null; do :; done
}
# ensure_forward_rules puts the rules first in FORWARD, ahead of kube-proxy's own.
ensure_forward_rules() {
	remove_forward_rules
	forward_rules -I 1
}

# remove_containers kills and deletes every container of the node's containerd, and the
# network namespaces of their pods, without the kubelet: what a killed run leaves behind.
remove_containers() {
	local ids id netns=()
	ids=$(ctr_ containers ls -q 2>/dev/null) || return 0
	[[ -n $ids ]] || return 0
	log "removing $(wc -w <<<"$ids") containers from the node's containerd"
	for id in $ids; do
		mapfile -t -O "${#netns[@]}" netns < <(ctr_ containers info "$id" 2>/dev/null | grep -o '/var/run/netns/cni-[0-9a-f-]*')
		ctr_ tasks delete --force "$id" >/dev/null 2>&1 || true
		ctr_ containers delete "$id" >/dev/null 2>&1 || true
	done
	for id in $(printf '%s\n' "${netns[@]}" | sort -u); do
		ip netns delete "${id##*/}" 2>/dev/null || true
	done
}

# remove_kubelet_chains deletes the iptables chains the kubelet adds (kube-proxy --cleanup
# removes kube-proxy's), among them KUBE-FIREWALL in INPUT and OUTPUT.
remove_kubelet_chains() {
	local ipt tc
	for ipt in iptables ip6tables; do
		command -v "$ipt" >/dev/null || continue
		while "$ipt" -w -D INPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
		while "$ipt" -w -D OUTPUT -j KUBE-FIREWALL 2>/dev/null; do :; done
		for tc in filter:KUBE-FIREWALL filter:KUBE-KUBELET-CANARY nat:KUBE-KUBELET-CANARY mangle:KUBE-KUBELET-CANARY mangle:KUBE-IPTABLES-HINT; do
			"$ipt" -w -t "${tc%%:*}" -F "${tc#*:}" 2>/dev/null && "$ipt" -w -t "${tc%%:*}" -X "${tc#*:}" 2>/dev/null || true
		done
	done
}

# remove_host_paths deletes what the kubelet and containerd's CNI create outside their
# configured directories, and those directories when nothing else is in them.
remove_host_paths() {
	find /var/log/containers -maxdepth 1 -type l -lname "$STATE/pod-logs/*" -delete 2>/dev/null || true
	rm -f /var/lib/cni/results/"$CNI_NETWORK"-*
	# The device manager's socket is always there; a kubelet of another cluster would have more.
	if [[ $(find /var/lib/kubelet -mindepth 1 2>/dev/null | sort | xargs) == "/var/lib/kubelet/device-plugins /var/lib/kubelet/device-plugins/kubelet.sock" ]]; then
		rm -f /var/lib/kubelet/device-plugins/kubelet.sock
	fi
	rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet /var/lib/cni/results /var/lib/cni /var/log/containers 2>/dev/null || true
}

# owns_machine says whether this STATE's cluster holds the machine-wide names: then its
# network, iptables rules, sysctls and /run/sts-cluster state are this cluster's to undo.
owns_machine() { [[ -f $OWNER_FILE && $(cat "$OWNER_FILE") == "$STATE" ]]; }

# teardown stops the cluster and undoes its changes to the machine. It copes with any state a
# killed bring-up or test run leaves, and touches only what this cluster created.
teardown() {
	stop_daemons kubelet kube-proxy
	# Containers outlive a killed containerd (their shims keep running); its state on tmpfs says
	# that a run ended without teardown.
	if owns_machine && [[ -d $RUN_DIR/containerd && -f $STATE/config/containerd.toml ]]; then
		if ! daemon_pid containerd >/dev/null; then
			start_daemon containerd containerd --config "$STATE/config/containerd.toml"
			wait_for containerd 30 ctr --address "$CONTAINERD_SOCK" version || true
		fi
		remove_containers
	fi
	stop_daemons coredns kube-scheduler kube-controller-manager kube-apiserver
	stop_daemons etcd containerd
	if owns_machine; then
		undo_machine_changes
		rm -f "$OWNER_FILE"
	fi
	# Per-run state; the certificates, the image store and the logs stay for the next run.
	rm -rf --one-file-system "$STATE/etcd" "$STATE/kubelet" "$STATE/pod-logs" "$STATE/cni/ipam" "$STATE/hostpath"
}

undo_machine_changes() {
	if [[ -x $K8S_BIN/kube-proxy ]] && command -v iptables >/dev/null; then
		"$K8S_BIN/kube-proxy" --cleanup >/dev/null 2>&1 || log "kube-proxy --cleanup failed (its rules may remain)"
	fi
	remove_forward_rules
	remove_kubelet_chains
	ip link delete "$POD_BRIDGE" 2>/dev/null || true
	ip link delete "$HOST_IF" 2>/dev/null || true # and with it the routes into it

	# Mounts that pods left when their kubelet or containerd died, lazily, deepest first; the
	# kubelet also bind-mounts its root directory onto itself.
	findmnt -rn -o TARGET | awk -v a="$STATE/kubelet" -v b="$RUN_DIR" '$0 == a || index($0, a "/") == 1 || index($0, b "/") == 1' |
		sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done

	if [[ -f $SYSCTL_SAVE ]]; then
		local k v
		while IFS='=' read -r k v; do
			echo "$v" >"$(sysctl_path "$k")" 2>/dev/null || log "could not restore $k=$v"
		done <"$SYSCTL_SAVE"
		rm -f "$SYSCTL_SAVE"
	fi
	remove_host_paths
	rm -rf --one-file-system "$RUN_DIR/containerd" "$RUN_DIR/runc"
	rm -f "$CONTAINERD_SOCK" "$CONTAINERD_SOCK.ttrpc"
}

# The Helm release `make e2e` and `make demo` install the operator as.
RELEASE=${E2E_RELEASE:-sts-operator}
OPERATOR_NAMESPACE=${E2E_OPERATOR_NAMESPACE:-sts-operator-system}

# install_operator IMAGE TARBALL installs or upgrades the operator with the project's Helm chart
# in the cluster of KUBECONFIG, running IMAGE (repository:tag, never pulled when present) for
# itself and for the table servers. The image's ID, read from its TARBALL, goes into a pod
# annotation: a rebuilt image under the same tag still rolls the operator. HELM names helm.
install_operator() {
	local id
	id=$(tar -xOf "$2" manifest.json | sed -n 's|.*"Config":"blobs/sha256/\([0-9a-f]\{12\}\).*|\1|p')
	log "installing the operator ($1, image ID $id) with the Helm chart: release $RELEASE in namespace $OPERATOR_NAMESPACE"
	"$HELM" upgrade --install "$RELEASE" "$repo/charts/sts-operator" --namespace "$OPERATOR_NAMESPACE" --create-namespace \
		--set-string image.repository="${1%:*}" --set-string image.tag="${1##*:}" --set image.pullPolicy=IfNotPresent \
		--set-string podAnnotations.image-id="$id" --wait --timeout 3m >/dev/null
}

# start_builds runs what does not need the cluster in the background, so that on a cold
# machine it compiles while up.sh builds the cluster: Helm when missing, the project's image
# (make image) and, with --suite, the e2e suite. MAKE, VERSION, IMG and HELM come from the
# Makefile. wait_builds waits for it; stop_builds ends it (its own process group).
start_builds() {
	mkdir -p "$STATE"
	log "building the image $IMG${1:+, the e2e suite}$([[ -x $HELM ]] || echo ' and Helm') in the background (log: $STATE/build.log)"
	set -m # the builds get a process group of their own
	(
		set -e
		if [[ ! -x $HELM ]]; then
			echo "building Helm (cold: about 4 minutes)"
			"$MAKE" -s -C "$repo" "$HELM"
		fi
		"$MAKE" -s -C "$repo" image VERSION="$VERSION" IMG="$IMG"
		if [[ ${1:-} == --suite ]]; then
			(cd "$repo" && go test -tags e2e -c -o "$STATE/e2e.test" ./test/e2e/ && rm "$STATE/e2e.test")
		fi
	) >"$STATE/build.log" 2>&1 &
	BUILD_PID=$!
	set +m
}

stop_builds() {
	[[ -z ${BUILD_PID:-} ]] || kill -TERM -- "-$BUILD_PID" 2>/dev/null || true
}

wait_builds() {
	if ! wait "$BUILD_PID"; then
		tail -20 "$STATE/build.log" >&2
		die "a background build failed; its log is $STATE/build.log"
	fi
}
