#!/usr/bin/env bash
# Tears the local cluster down: stops the processes recorded in STATE/pids (and nothing else),
# removes its containers, pod network namespaces, mounts, interfaces, routes and iptables rules,
# puts back the sysctls it changed, and deletes the per-run state. Certificates, the image store,
# built binaries and the last run's logs (STATE/logs) stay. Safe to run at any time, also after
# a killed run.
#
#   hack/cluster/down.sh
set -euo pipefail
# shellcheck source=hack/cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
require_root_linux
lock_machine
if [[ -f $OWNER_FILE ]] && owner=$(cat "$OWNER_FILE") && [[ $owner != "$STATE" ]] && any_daemon_running "$owner"; then
	die "the machine's local cluster belongs to $owner, not to $STATE: stop it from there"
fi
teardown
log "the local cluster is down"
