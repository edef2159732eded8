# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# netns.bash - a client and a server network namespace joined by veth
# pairs, one per path; sourced (by scripts/demo-nbd.sh and the multipath
# tests), not run. Needs root and iproute2.
#
#   netns_setup PREFIX IF SUBNET NPATHS
#       Makes namespaces PREFIX-c-TAG (client) and PREFIX-s-TAG (server),
#       TAG = $NETNS_TAG or else $$, with lo up, and NPATHS veth pairs:
#       path i is ${IF}c$i-TAG in the client with 10.250.(SUBNET+i).1/24
#       and ${IF}s$i-TAG in the server with 10.250.(SUBNET+i).2/24, both
#       up. Sets NETNS_C, NETNS_S (the namespaces), NETNS_CIF and
#       NETNS_SIF (arrays: path i's interface on each side). Returns 1 if
#       namespaces or veth pairs cannot be made here (a test skips), 2 if
#       configuring them failed; NETNS_ERR says which.
#   netns_cleanup
#       Kills every process in the namespaces and deletes them; safe to
#       call twice, or before or after a failed netns_setup.
#   netns_link I up|down
#       Sets path I's client-side link up or down.
#   netns_test PREFIX IF SUBNET NPATHS [COMMAND...]
#       A test's setup, once its EXIT trap calls netns_cleanup: exits 77
#       ("SKIP: why") without root, iproute2, a COMMAND, or namespaces and
#       veth pairs, 1 ("FAIL: why") if configuring them failed; else sets
#       C and S to the namespaces made by netns_setup.

# The callers read these.
# shellcheck disable=SC2034

NETNS_C=
NETNS_S=
NETNS_CIF=()
NETNS_SIF=()
NETNS_ERR=

netns_setup() {
	local prefix=$1 if=$2 subnet=$3 n=$4 tag=${NETNS_TAG:-$$} i net
	NETNS_C=$prefix-c-$tag
	NETNS_S=$prefix-s-$tag
	NETNS_CIF=()
	NETNS_SIF=()
	NETNS_ERR="cannot create network namespaces"
	ip netns add "$NETNS_C" 2>/dev/null || return 1
	ip netns add "$NETNS_S" || return 1
	for ((i = 0; i < n; i++)); do
		NETNS_CIF[i]=${if}c$i-$tag
		NETNS_SIF[i]=${if}s$i-$tag
		NETNS_ERR="cannot create veth pairs"
		ip link add "${NETNS_CIF[i]}" type veth peer \
			name "${NETNS_SIF[i]}" || return 1
		NETNS_ERR="cannot configure path $i's veth pair"
		net=10.250.$((subnet + i))
		ip link set "${NETNS_CIF[i]}" netns "$NETNS_C" &&
			ip link set "${NETNS_SIF[i]}" netns "$NETNS_S" &&
			ip -n "$NETNS_C" addr add "$net.1/24" dev "${NETNS_CIF[i]}" &&
			ip -n "$NETNS_S" addr add "$net.2/24" dev "${NETNS_SIF[i]}" &&
			ip -n "$NETNS_C" link set "${NETNS_CIF[i]}" up &&
			ip -n "$NETNS_S" link set "${NETNS_SIF[i]}" up || return 2
	done
	NETNS_ERR="cannot bring lo up in the namespaces"
	ip -n "$NETNS_C" link set lo up && ip -n "$NETNS_S" link set lo up ||
		return 2
	NETNS_ERR=
}

netns_cleanup() {
	local ns
	for ns in "$NETNS_C" "$NETNS_S"; do
		[ -n "$ns" ] || continue
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
	done
	for ns in "$NETNS_C" "$NETNS_S"; do
		[ -n "$ns" ] || continue
		ip netns del "$ns" 2>/dev/null
	done
	# A pair that never made it into a namespace.
	for ns in "${NETNS_CIF[@]}"; do
		ip link del "$ns" 2>/dev/null
	done
	return 0
}

netns_link() {
	ip -n "$NETNS_C" link set "${NETNS_CIF[$1]}" "$2"
}

netns_test() {
	local cmd rc=0
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
	command -v ip >/dev/null || { echo "SKIP: needs iproute2"; exit 77; }
	for cmd in "${@:5}"; do
		command -v "$cmd" >/dev/null || { echo "SKIP: needs $cmd"; exit 77; }
	done
	netns_setup "$1" "$2" "$3" "$4" || rc=$?
	[ "$rc" -ne 1 ] || { echo "SKIP: $NETNS_ERR"; exit 77; }
	[ "$rc" -eq 0 ] || { echo "FAIL: $NETNS_ERR"; exit 1; }
	C=$NETNS_C
	S=$NETNS_S
}

# netns_stop_proc PID: stop a process this shell started (an empty PID is
# nothing to do): SIGTERM, up to 5 s to exit, then SIGKILL; reaped.
netns_stop_proc() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}
