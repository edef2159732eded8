#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/sessions.sh BUILD-DIR - how the server's cost grows with its
# clients, on loopback: one "ibtrs server --null" and, for each count of
# SESSIONS, that many "ibtrs bench" client processes (the tool holds one
# session a process) of 4 KiB random reads sharing QD_TOTAL requests in
# flight (at least one each). Measured over a common window of WINDOW
# seconds once every session runs, from the server's own counters
# (--stats-file) and /proc: aggregate IOPS, p99 latency (the median and
# the worst of the sessions' p99, over each client's whole run, which
# SIGTERM ends after the window), server RSS, server CPU per request.
# Then the server RSS of IDLE idle sessions held by one process
# (tests/func/sessions of BUILD-DIR, IBTRS_SESSIONS_IO=0), at the
# server's default queue depth.
#
# Environment: SESSIONS ("1 8 64 256"), QD_TOTAL (64), WINDOW (3),
# IDLE (1000), RUNS (1: tables printed one after the other).
#
# Exit status: 0, 1 when a run failed, 2 usage.
set -u

if [ $# -ne 1 ] || [ ! -x "$1/ibtrs" ]; then
	echo "usage: $0 BUILD-DIR (holding ibtrs and tests/func_sessions)" >&2
	exit 2
fi
bin=$1/ibtrs
holder=$1/tests/func_sessions
SESSIONS=${SESSIONS:-"1 8 64 256"}
QD_TOTAL=${QD_TOTAL:-64}
WINDOW=${WINDOW:-3}
IDLE=${IDLE:-1000}
RUNS=${RUNS:-1}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibtrs-sessions.XXXXXX") || exit 1
srv_pid=
clt_pids=()
cleanup() {
	local p
	for p in "${clt_pids[@]}" $srv_pid; do
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
export IBTRS_CONTROL=0
hz=$(getconf CLK_TCK)

# field NAME FILE: the first number NAME of the one-line JSON FILE (the
# session's own "p99" comes before its paths')
field() {
	sed -n "s/^[^}]*\"$1\":\([0-9.]*\).*/\1/p" "$2"
}

# cpu_ticks PID: user + system time of PID, clock ticks
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# wait_for COUNT: until the server counts COUNT sessions (120 s at most)
wait_for() {
	local i
	for i in $(seq 1200); do
		[ "$(field sessions "$tmp/stats.json" 2>/dev/null)" = "$1" ] &&
			return 0
		sleep 0.1
	done
	echo "only $(field sessions "$tmp/stats.json") of $1 sessions" >&2
	return 1
}

# live: the clients still running (one that could not connect has left;
# the row then counts the others, and says so)
live() {
	local p k=0
	for p in "${clt_pids[@]}"; do
		kill -0 "$p" 2>/dev/null && k=$((k + 1))
	done
	echo $k
}

# wait_clients: until every live client holds its session
wait_clients() {
	local i s
	for i in $(seq 1200); do
		s=$(field sessions "$tmp/stats.json" 2>/dev/null)
		[ -n "$s" ] && [ "$s" -gt 0 ] && [ "$s" = "$(live)" ] &&
			return 0
		sleep 0.1
	done
	echo "only $s of $(live) sessions" >&2
	return 1
}

one_row() {
	local n=$1 qd=$((QD_TOTAL / $1)) i r0 r1 c0 c1 t0 t1 rss secs
	[ "$qd" -ge 1 ] || qd=1
	# They run until the window is over: SIGTERM ends a run early,
	# with its figures.
	clt_pids=()
	for i in $(seq "$n"); do
		"$bin" bench --path ip:127.0.0.1 --port "$port" --rw read \
			--bs 4096 --qd "$qd" --time 3600 --json \
			--quiet >"$tmp/c$i.json" 2>"$tmp/c$i.err" &
		clt_pids+=($!)
	done
	wait_clients || return 1
	sleep 1 # every client past its start
	if [ "$(live)" != "$n" ]; then
		echo "$((n - $(live))) of $n clients could not connect" >&2
		n=$(live)
	fi
	r0=$(field requests "$tmp/stats.json")
	c0=$(cpu_ticks "$srv_pid")
	t0=$(date +%s.%N)
	sleep "$WINDOW"
	r1=$(field requests "$tmp/stats.json")
	c1=$(cpu_ticks "$srv_pid")
	t1=$(date +%s.%N)
	rss=$(rss_kb "$srv_pid")
	for i in "${clt_pids[@]}"; do
		kill -TERM "$i" 2>/dev/null
	done
	for i in "${clt_pids[@]}"; do
		wait "$i"
	done
	clt_pids=()
	for i in "$tmp"/c*.json; do field p99 "$i"; done |
		sort -n >"$tmp/p99"
	awk -v n="$n" -v qd="$qd" -v r="$((r1 - r0))" \
		-v c="$((c1 - c0))" -v hz="$hz" -v t0="$t0" -v t1="$t1" \
		-v rss="$rss" -v f="$tmp/p99" 'BEGIN {
		k = 0
		while ((getline v < f) > 0) p[k++] = v
		secs = t1 - t0
		printf "%8d %6d %10.0f %9.1f %9.1f %10.1f %10.2f\n", n, qd,
			r / secs, p[int((k - 1) / 2)], p[k - 1], rss / 1024,
			r ? c / hz * 1e6 / r : 0
	}'
	rm -f "$tmp"/c*.json
	wait_for 0
}

run() {
	"$bin" server --null -p 0 -l ip:127.0.0.1 -q -d 64 \
		--stats-file "$tmp/stats.json" >"$tmp/srv.out" 2>&1 &
	srv_pid=$!
	for i in $(seq 100); do
		grep -q "listening on port" "$tmp/srv.out" && break
		sleep 0.1
	done
	port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$tmp/srv.out")
	[ -n "$port" ] || { cat "$tmp/srv.out" >&2; return 1; }
	echo "server: ibtrs server --null, queue depth 64; clients: 4 KiB random reads, $QD_TOTAL in flight in all (1 at least a session), window ${WINDOW} s"
	printf "%8s %6s %10s %9s %9s %10s %10s\n" sessions qd/sess IOPS \
		"p99 med" "p99 max" "RSS MiB" "us/req"
	for n in $SESSIONS; do
		one_row "$n" || return 1
	done
	kill "$srv_pid"
	wait "$srv_pid" 2>/dev/null
	srv_pid=
	if [ -x "$holder" ] && [ "$IDLE" -gt 0 ]; then
		IBTRS_SESSIONS_N=$IDLE IBTRS_SESSIONS_IO=0 \
			IBTRS_SESSIONS_QD=128 "$holder" | grep "sessions of"
	fi
}

for r in $(seq "$RUNS"); do
	[ "$RUNS" -gt 1 ] && echo "run $r of $RUNS"
	run || exit 1
done
