#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# paths.sh - multipath figures in network namespaces: aggregation, a slow
# path, and the failover gap, for ibtrs and for MPTCP as the peer.
#
#   bench/paths.sh IBTRS_BINARY [RATE_MBIT [SECONDS]]
#
# Two veth paths between a client and a server namespace, each limited by
# tbf to RATE_MBIT (default 100) on the client's side. Rows, in MB/s of
# 128 KiB writes at QD 16 ("ibtrs bench"; "mptcpize run iperf3" with two
# subflows for MPTCP):
#   one        one path of R
#   two        two paths of R each (target: >= 1.8 x one)
#   slow       path 1 at R/10 (target: >= 0.9 x one, every policy)
#   gap        path 1's link cut after 1/3 of the run: the longest gap
#              without a completed request (ibtrs: max_gap_ms; MPTCP: the
#              longest iperf3 interval of 0.1 s with nothing sent)
# and for ibtrs the longest latency of one request (max_lat_ms): with a
# path cut, that of a request caught on it, failed over.
# A benchmark, not a test: it prints, it does not judge. Needs root,
# iproute2, tc, python3; the MPTCP rows need iperf3 and mptcpize (Debian
# iperf3, mptcpd) and a kernel with MPTCP. Only addresses inside the
# namespaces made here are used; everything made is removed on exit.
set -u
tool=${1:?usage: $0 IBTRS_BINARY [RATE_MBIT [SECONDS]]}
rate=${2:-100}
secs=${3:-8}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/scripts/netns.bash"
port=7300
tmp=$(mktemp -d /tmp/ibtrs-paths.XXXXXX)
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	netns_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT

[ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 77; }
netns_setup ibtrsp p 40 2 || { echo "no namespaces: $NETNS_ERR"; exit 77; }
C=$NETNS_C
S=$NETNS_S

limit() { # limit PATH MBIT | limit PATH off
	local dev=${NETNS_CIF[$1]}
	tc -n "$C" qdisc del dev "$dev" root 2>/dev/null
	[ "$2" = off ] && return 0
	tc -n "$C" qdisc add dev "$dev" root tbf rate "${2}mbit" \
		burst 64kb latency 50ms
}

ip netns exec "$S" "$tool" server --port "$port" --quiet >"$tmp/srv.out" 2>&1 &
pids+=("$!")
for _ in $(seq 100); do
	grep -q listening "$tmp/srv.out" && break
	sleep 0.05
done

# ibtrs_row NAME NPATHS POLICY [CUT]: prints "MB/s max_gap_ms share1
# max_lat_ms".
ibtrs_row() {
	local name=$1 np=$2 policy=$3 cut=${4:-} args bpid
	args=(--path ip:10.250.40.2)
	[ "$np" -eq 2 ] && args+=(--path ip:10.250.41.2)
	ip netns exec "$C" "$tool" bench "${args[@]}" --port "$port" \
		--rw write --bs 128k --qd 16 --time "$secs" --policy "$policy" \
		--json --quiet --hb-timeout 1000 >"$tmp/$name.json" 2>/dev/null &
	bpid=$!
	if [ -n "$cut" ]; then
		sleep "$((secs / 3))"
		netns_link 1 down
	fi
	wait "$bpid"
	[ -n "$cut" ] && netns_link 1 up
	python3 - "$tmp/$name.json" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print("n/a n/a n/a n/a")
    sys.exit(0)
ops = [p["ops"] for p in d["paths"]]
share = 100.0 * ops[1] / sum(ops) if len(ops) > 1 and sum(ops) else 0
lat = d.get("lat_us", {}).get("max", 0) / 1000.0
print(f"{d['mbps']:.2f} {d.get('max_gap_ms', 0):.0f} {share:.2f} {lat:.0f}")
EOF
}

# mptcp_row NAME NPATHS [CUT]: prints "MB/s max_gap_ms".
mptcp_row() {
	local name=$1 np=$2 cut=${3:-} cpid
	command -v iperf3 >/dev/null && command -v mptcpize >/dev/null ||
		{ echo "n/a n/a"; return; }
	ip -n "$S" mptcp limits set subflow 2 add_addr_accepted 2
	ip -n "$C" mptcp limits set subflow 2 add_addr_accepted 2
	ip -n "$C" mptcp endpoint flush
	[ "$np" -eq 2 ] && ip -n "$C" mptcp endpoint add 10.250.41.1 \
		dev "${NETNS_CIF[1]}" subflow
	ip netns exec "$S" mptcpize run iperf3 -s -1 -B 10.250.40.2 \
		-p $((port + 1)) >/dev/null 2>&1 &
	pids+=("$!")
	sleep 0.5
	ip netns exec "$C" mptcpize run iperf3 -c 10.250.40.2 \
		-p $((port + 1)) -t "$secs" -i 0.1 -l 128K -J \
		>"$tmp/$name.json" 2>/dev/null &
	cpid=$!
	if [ -n "$cut" ]; then
		sleep "$((secs / 3))"
		netns_link 1 down
	fi
	wait "$cpid"
	[ -n "$cut" ] && netns_link 1 up
	python3 - "$tmp/$name.json" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    mbps = d["end"]["sum_sent"]["bits_per_second"] / 8e6
    gap = run = 0.0
    for i in d["intervals"]:
        s = i["sum"]
        run = run + s["seconds"] if s["bytes"] == 0 else 0.0
        gap = max(gap, run)
    print(f"{mbps:.2f} {gap * 1000:.0f}")
except Exception:
    print("n/a n/a")
EOF
}

printf '%-28s %10s %12s %10s %11s\n' row MB/s max_gap_ms path1_% max_lat_ms
limit 0 "$rate"
limit 1 "$rate"
read -r one g1 _ l < <(ibtrs_row one 1 min-inflight)
printf '%-28s %10s %12s %10s %11s\n' "ibtrs one path R" "$one" "$g1" - "$l"
for pol in min-inflight rr min-latency; do
	read -r m g s l < <(ibtrs_row "two-$pol" 2 "$pol")
	printf '%-28s %10s %12s %10s %11s\n' "ibtrs two R ($pol)" "$m" "$g" "$s" "$l"
done
read -r m g < <(mptcp_row mptcp-one 1)
printf '%-28s %10s %12s %10s\n' "mptcp one path R" "$m" "$g" -
read -r m g < <(mptcp_row mptcp-two 2)
printf '%-28s %10s %12s %10s\n' "mptcp two R" "$m" "$g" -
limit 1 "$((rate / 10))"
for pol in min-inflight rr min-latency; do
	read -r m g s l < <(ibtrs_row "slow-$pol" 2 "$pol")
	printf '%-28s %10s %12s %10s %11s\n' "ibtrs R + R/10 ($pol)" "$m" "$g" "$s" "$l"
done
read -r m g < <(mptcp_row mptcp-slow 2)
printf '%-28s %10s %12s %10s\n' "mptcp R + R/10" "$m" "$g" -
limit 1 "$rate"
read -r m g s l < <(ibtrs_row cut 2 min-inflight cut)
printf '%-28s %10s %12s %10s %11s\n' "ibtrs two R, path 1 cut" "$m" "$g" "$s" "$l"
read -r m g < <(mptcp_row mptcp-cut 2 cut)
printf '%-28s %10s %12s %10s\n' "mptcp two R, path 1 cut" "$m" "$g" -
