#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench/sessions.sh BUILD-DIR - how the server's cost grows with its
# clients, on loopback: one "ibtrs server --null" and, for each layout
# PxS of LAYOUTS, P "ibtrs bench --sessions S" client processes (S
# sessions each, on the process's shared loop threads: the tool's
# default, the online CPUs at most S) of 4 KiB random reads sharing
# QD_TOTAL requests in flight (at least one a session). Measured over a
# common window of WINDOW seconds once every session runs, from the
# server's own counters (--stats-file) and /proc: aggregate IOPS, p99
# latency (the median and the worst of the sessions' p99, over each
# client's whole run, which SIGTERM ends after the window), server RSS,
# server CPU per request. The ratio column is the row's IOPS over the
# first row's, of the same run.
# Then the server RSS of IDLE idle sessions held by one process
# (tests/func/sessions of BUILD-DIR, IBTRS_SESSIONS_IO=0), at the
# server's default queue depth.
#
# Environment: LAYOUTS ("1x1 2x4 4x16 64x1 8x32": 1, 8, 64, 64 and 256
# sessions; 64x1 is one process a session, as the tool had to before),
# QD_TOTAL (64), WINDOW (3), IDLE (1000), RUNS (1: tables printed one
# after the other), LOOPS (empty: the tool's default; else --loops),
# SRV_LOOPS (empty: the server's default; else the server's --loops, or
# several values, e.g. "1 2": one table each, one after the other in
# every run, so that they compare within the run; every other run takes
# them in the reverse order, so that neither always comes first).
#
# Exit status: 0, 1 when a run failed, 2 usage.
set -u

if [ $# -ne 1 ] || [ ! -x "$1/ibtrs" ]; then
	echo "usage: $0 BUILD-DIR (holding ibtrs and tests/func_sessions)" >&2
	exit 2
fi
bin=$1/ibtrs
holder=$1/tests/func_sessions
LAYOUTS=${LAYOUTS:-"1x1 2x4 4x16 64x1 8x32"}
LOOPS=${LOOPS:-}
SRV_LOOPS=${SRV_LOOPS:-}
QD_TOTAL=${QD_TOTAL:-64}
WINDOW=${WINDOW:-3}
IDLE=${IDLE:-1000}
RUNS=${RUNS:-1}
for l in $SRV_LOOPS; do
	case $l in
	*[!0-9]* | 0) ;;
	*) continue ;;
	esac
	echo "$0: bad value '$l' in SRV_LOOPS: server loop threads, e.g. 2" >&2
	exit 2
done
for l in $LAYOUTS; do
	case $l in
	[1-9]*x[1-9]*) [ -z "${l//[0-9x]/}" ] && continue ;;
	esac
	echo "$0: bad layout '$l' in LAYOUTS: PROCESSESxSESSIONS, e.g. 4x16" >&2
	exit 2
done
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

# sess_p99 FILE: each session's p99 of a client's JSON, one a line
sess_p99() {
	if grep -q '"sess_p99_us":' "$1"; then
		sed -n 's/.*"sess_p99_us":\[\([^]]*\)\].*/\1/p' "$1" |
			tr ',' '\n'
	else
		field p99 "$1"
	fi
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

# wait_clients PER: until every live client holds its PER sessions
wait_clients() {
	local i s
	for i in $(seq 1200); do
		s=$(field sessions "$tmp/stats.json" 2>/dev/null)
		[ -n "$s" ] && [ "$s" -gt 0 ] &&
			[ "$s" = "$(($(live) * $1))" ] && return 0
		sleep 0.1
	done
	echo "only $s of $(($(live) * $1)) sessions" >&2
	return 1
}

# one_row P S: P client processes of S sessions each
one_row() {
	local p=$1 per=$2 n=$(($1 * $2)) qd i r0 r1 c0 c1 t0 t1 rss
	local args=()
	qd=$((QD_TOTAL / n))
	[ "$qd" -ge 1 ] || qd=1
	[ "$per" -gt 1 ] && args=(--sessions "$per")
	[ "$per" -gt 1 ] && [ -n "$LOOPS" ] && args+=(--loops "$LOOPS")
	# They run until the window is over: SIGTERM ends a run early,
	# with its figures.
	clt_pids=()
	for i in $(seq "$p"); do
		"$bin" bench --path ip:127.0.0.1 --port "$port" --rw read \
			--bs 4096 --qd $((qd * per)) "${args[@]}" --time 3600 \
			--json --quiet >"$tmp/c$i.json" 2>"$tmp/c$i.err" &
		clt_pids+=($!)
	done
	wait_clients "$per" || return 1
	sleep 1 # every client past its start
	if [ "$(live)" != "$p" ]; then
		echo "$((p - $(live))) of $p clients could not connect" >&2
		n=$(($(live) * per))
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
	for i in "$tmp"/c*.json; do sess_p99 "$i"; done |
		sort -n >"$tmp/p99"
	awk -v n="$n" -v lay="${p}x${per}" -v qd="$qd" -v r="$((r1 - r0))" \
		-v c="$((c1 - c0))" -v hz="$hz" -v t0="$t0" -v t1="$t1" \
		-v rss="$rss" -v f="$tmp/p99" -v base="$base_iops" 'BEGIN {
		k = 0
		while ((getline v < f) > 0) p[k++] = v
		secs = t1 - t0
		iops = r / secs
		ratio = base > 0 ? iops / base : 1
		printf "%8d %6s %6d %10.0f %6.2f %9.1f %9.1f %10.1f %10.2f\n",
			n, lay, qd, iops, ratio,
			p[int((k - 1) / 2)], p[k - 1], rss / 1024,
			r ? c / hz * 1e6 / r : 0
	}' | tee "$tmp/row"
	[ -n "$base_iops" ] || base_iops=$(awk '{ print $4 }' "$tmp/row")
	rm -f "$tmp"/c*.json
	wait_for 0
}

# table [SRV-LOOPS]: a server (with --loops SRV-LOOPS if given), every
# layout, the server ended
table() {
	local sargs=()
	[ -n "${1:-}" ] && sargs=(--loops "$1")
	# The last run's output must not be read for this one's port.
	rm -f "$tmp/srv.out" "$tmp"/c*.err
	# Every client comes from 127.0.0.1: one client as the server's
	# limits count them (64 sessions, 16 unfinished handshakes), where
	# this stands for many client hosts.
	"$bin" server --null -p 0 -l ip:127.0.0.1 -q -d 64 \
		--max-sessions-per-client 4096 --max-cons-per-client 16384 \
		--max-handshakes-per-client 1024 "${sargs[@]}" \
		--stats-file "$tmp/stats.json" >"$tmp/srv.out" 2>&1 &
	srv_pid=$!
	for i in $(seq 100); do
		grep -qs "listening on port" "$tmp/srv.out" && break
		sleep 0.1
	done
	port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$tmp/srv.out")
	[ -n "$port" ] || { cat "$tmp/srv.out" >&2; return 1; }
	echo "server: ibtrs server --null, queue depth 64${1:+, $1 loop threads}; clients: 4 KiB random reads, $QD_TOTAL in flight in all (1 at least a session), window ${WINDOW} s"
	printf "%8s %6s %6s %10s %6s %9s %9s %10s %10s\n" sessions PxS \
		qd/sess IOPS ratio "p99 med" "p99 max" "RSS MiB" "us/req"
	base_iops=
	for l in $LAYOUTS; do
		one_row "${l%x*}" "${l#*x}" || return 1
	done
	kill "$srv_pid"
	wait "$srv_pid" 2>/dev/null
	srv_pid=
}

# run N: the tables of run N, then the idle sessions' RSS
run() {
	local l order=$SRV_LOOPS
	[ $(($1 % 2)) -eq 0 ] && order=$(echo $SRV_LOOPS | tr ' ' '\n' | tac)
	if [ -z "$SRV_LOOPS" ]; then
		table || return 1
	else
		for l in $order; do
			table "$l" || return 1
		done
	fi
	if [ -x "$holder" ] && [ "$IDLE" -gt 0 ]; then
		IBTRS_SESSIONS_N=$IDLE IBTRS_SESSIONS_IO=0 \
			IBTRS_SESSIONS_QD=128 "$holder" | grep "sessions of"
	fi
}

for r in $(seq "$RUNS"); do
	[ "$RUNS" -gt 1 ] && echo "run $r of $RUNS"
	run "$r" || exit 1
done
