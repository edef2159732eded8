#!/bin/bash
# SPDX-License-Identifier: MIT
# sigterm.sh - "ibtrs bench" ends within 2 s of SIGTERM (and of SIGINT)
# whatever is in flight: here every path drops everything (ibtrs fault
# drop on both paths), so requests are stuck and their tags held. The
# requests still in flight fail as the session closes, and the bench
# exits 1. The same with the server stopped (SIGSTOP) and the paths kept
# up by a long heartbeat timeout: the bench's last request, for the
# server's CPU time, is stuck too and must not hold the exit.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

command -v python3 >/dev/null 2>&1 || skip "no python3 to read the JSON"

export IBTRS_RUNTIME_DIR
IBTRS_RUNTIME_DIR=$(mktemp -d "$TMP/rt.XXXXXX") || fail "mktemp"

start_server srv --port 0 --quiet

# all_down PID: no path of PID's session is connected (the heartbeats of
# the dropping paths timed out: their requests are parked, stuck).
all_down() {
	run_bounded 20 "$IBTRS" status --json 2>/dev/null </dev/null |
		python3 -c '
import json, sys
pid = int(sys.argv[1])
for p in json.load(sys.stdin):
    if p["pid"] == pid and p["clients"]:
        paths = p["clients"][0]["paths"]
        sys.exit(0 if paths and all(x["state"] != "connected"
                                    for x in paths) else 1)
sys.exit(1)' "$1"
}

# running NAME PID: wait (30 s at most) for the bench's first one-second
# line in $TMP/NAME.err: its run is on.
running() {
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q '^{' "$TMP/$1.err" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || gone "$1" "$2"
		sleep 0.1
	done
	fail "$1: the run did not start"
}

# gone NAME PID: the bench ended by itself; fail with its exit status and
# the end of what it wrote.
gone() {
	local rc
	wait "$2"
	rc=$?
	grep -v '^{' "$TMP/$1.err" | tail -20 | sed 's/^/  stderr: /' >&2
	kill -0 "$SRV_PID" 2>/dev/null || echo "  the server is gone too" >&2
	tail -40 "$TMP/srv.err" | sed 's/^/  server: /' >&2
	fail "$1: the bench is gone (exit $rc): $(head -c 400 "$TMP/$1.json")"
}

# signal_gone SIGNAL PID: send it, wait up to 2 s for PID to end; sets
# $ms to the time it took and $alive to 1 if it still runs.
signal_gone() {
	local i t0 t1
	t0=$(date +%s%N)
	kill "-$1" "$2"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$2" 2>/dev/null || break
		sleep 0.02
	done
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	alive=0
	kill -0 "$2" 2>/dev/null && alive=1
}

# stuck SIGNAL: a bench whose paths both start dropping once its run is on
# (its first one-second line) gets SIGNAL when requests are stuck; it must
# be gone within 2 s. The drops are injected then, not after a fixed time
# (IBTRS_FAULT=...@MS counts from the start of the process): on a loaded
# host the open and the bench's first question to the server (its CPU
# time) may take longer than that, and a drop before the run would leave
# no request in flight, only submissions refused for want of a path.
stuck() {
	local sig=$1 pid i rc p
	"$IBTRS" bench --sessname "sigterm-$sig" \
		--path ip:127.0.0.1 --path ip:127.0.0.2,ip:127.0.0.1 \
		--port "$SRV_PORT" --verify --qd 16 --time 120 --json \
		--interval-json >"$TMP/$sig.json" 2>"$TMP/$sig.err" &
	pid=$!
	PIDS+=("$pid")
	running "$sig" "$pid"
	for p in 0 1; do
		run_bounded 20 "$IBTRS" fault "sigterm-$sig" "$p" drop \
			--pid "$pid" >/dev/null || fail "$sig: cannot drop path $p"
	done
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || gone "$sig" "$pid"
		all_down "$pid" && break
		sleep 0.1
	done
	all_down "$pid" || fail "$sig: the paths did not go down"
	signal_gone "$sig" "$pid"
	[ "$alive" = 0 ] || fail "$sig: the bench still runs after 2 s"
	wait "$pid"
	rc=$?
	echo "$sig: exit $rc after $ms ms: $(head -c 400 "$TMP/$sig.json")"
	grep -v '^{' "$TMP/$sig.err" | sed 's/^/  stderr: /' | head -5
	[ "$ms" -le 2000 ] || fail "$sig: the bench took $ms ms to end"
	[ "$rc" -eq 1 ] || fail "$sig: exit $rc, expected 1"
	python3 - "$TMP/$sig.json" "$sig" <<'PY' ||
import json, sys
d = json.load(open(sys.argv[1]))
assert d["signal"] == "SIG" + sys.argv[2], d["signal"]
# The requests stuck on the dropping paths failed at close, and are
# told apart as failed by the close.
assert d["errors"] > 0 and d["lost"] == 0, (d["errors"], d["lost"])
assert d["aborted"] == d["errors"], (d["aborted"], d["errors"])
assert d["verify_failures"] == 0
PY
		fail "$sig: unexpected result: $(cat "$TMP/$sig.json")"
}

stuck TERM
stuck INT

# The server stopped under a running bench whose paths stay connected
# (heartbeat timeout 60 s): SIGTERM must end it within 2 s all the same.
"$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" --qd 16 --time 120 \
	--hb-timeout 60000 --json --interval-json >"$TMP/stopped.json" \
	2>"$TMP/stopped.err" &
pid=$!
PIDS+=("$pid")
running stopped "$pid"
kill -STOP "$SRV_PID"
signal_gone TERM "$pid"
kill -CONT "$SRV_PID"
wait "$pid"
rc=$?
echo "server stopped: exit $rc after $ms ms: $(head -c 300 "$TMP/stopped.json")"
[ "$alive" = 0 ] || fail "stopped: the bench still runs after 2 s"
[ "$ms" -le 2000 ] || fail "stopped: the bench took $ms ms to end"
grep -q '"signal":"SIGTERM"' "$TMP/stopped.json" ||
	fail "stopped: no SIGTERM in the result: $(cat "$TMP/stopped.json")"
stop_server "$SRV_PID"
echo "PASS"
