#!/bin/bash
# SPDX-License-Identifier: MIT
# failover.sh - "ibtrs bench --verify" over two loopback paths while the
# library injects a fault into path 1 (IBTRS_FAULT): a reset connection
# (close) must be reconnected, a silent one (drop) detected by heartbeats;
# in both cases no request may fail, be lost, read wrong data or run twice
# on the server (--stats-file "duplicates").
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

if command -v jq >/dev/null 2>&1; then
	JSON=jq
elif command -v python3 >/dev/null 2>&1; then
	JSON=python3
else
	skip "neither jq nor python3 to read the JSON output"
fi

# check FILE JQ_EXPR PY_EXPR WHAT: the JSON object in FILE (as d in
# PY_EXPR) satisfies the expression, else fail with WHAT.
check() {
	local f=$1 jqx=$2 pyx=$3 what=$4
	if [ "$JSON" = jq ]; then
		jq -e "$jqx" "$f" >/dev/null || fail "$what: $(cat "$f")"
	else
		python3 - "$f" "$pyx" <<'PY' || fail "$what: $(cat "$f")"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
	fi
}

# run_case NAME FAULT [BENCH ARGS...]: a server with a stats file, a 6 s
# verifying bench with IBTRS_FAULT=FAULT, the server stopped; leaves
# $TMP/NAME.json (bench) and $TMP/NAME-stats.json (server).
run_case() {
	local name=$1 fault=$2 rc
	shift 2
	start_server "$name-srv" --port 0 --quiet \
		--stats-file "$TMP/$name-stats.json"
	IBTRS_FAULT=$fault run_bounded 90 "$IBTRS" bench \
		--path ip:127.0.0.1 --path ip:127.0.0.2,ip:127.0.0.1 \
		--port "$SRV_PORT" --verify --qd 32 --time 6 --json --events \
		"$@" >"$TMP/$name.json" 2>"$TMP/$name.err"
	rc=$?
	echo "$name (IBTRS_FAULT=$fault $*): exit $rc: $(cat "$TMP/$name.json")"
	sed 's/^/  stderr: /' "$TMP/$name.err"
	[ "$rc" -eq 0 ] || fail "$name: bench exited with $rc"
	# The stats file is rewritten while the server runs ...
	[ -s "$TMP/$name-stats.json" ] || fail "$name: no stats file"
	stop_server "$SRV_PID"
	# ... and once more at exit.
	echo "$name server: $(cat "$TMP/$name-stats.json")"
	[ -e "$TMP/$name-stats.json.tmp" ] && fail "$name: stats temp file left"
	check "$TMP/$name-stats.json" \
		'.duplicates == 0 and .requests > 0 and .proto_errors == 0' \
		'd["duplicates"] == 0 and d["requests"] > 0 and
		 d["proto_errors"] == 0' \
		"$name: the server ran a request twice or saw errors"
	check "$TMP/$name.json" \
		'.errors == 0 and .verify_failures == 0 and .lost == 0 and
		 .ops > 0 and (.paths | length) == 2' \
		'd["errors"] == 0 and d["verify_failures"] == 0 and
		 d["lost"] == 0 and d["ops"] > 0 and len(d["paths"]) == 2' \
		"$name: failed, wrong or lost requests"
}

# Path 1's connections are reset after 2 s: it must come back.
run_case close 1:close@2000
check "$TMP/close.json" \
	'.paths[1].failovers >= 0 and .paths[1].reconnects >= 1 and
	 any(.events[]; .path == 1 and (.msg | test("reconnecting")))' \
	'd["paths"][1]["failovers"] >= 0 and d["paths"][1]["reconnects"] >= 1
	 and any(e["path"] == 1 and "reconnecting" in e["msg"]
		 for e in d["events"])' \
	"close: path 1 did not reconnect"

# Path 1 goes silent after 2 s: heartbeats (500 ms) must find out, and the
# requests must go on over path 0 without a long stall.
run_case drop 1:drop@2000 --hb-timeout 500
check "$TMP/drop.json" \
	'any(.events[]; .path == 1 and (.msg | test("heartbeat timeout"))) and
	 .max_gap_ms < 1500' \
	'any(e["path"] == 1 and "heartbeat timeout" in e["msg"]
	     for e in d["events"]) and d["max_gap_ms"] < 1500' \
	"drop: no heartbeat timeout on path 1, or a stall of 1.5 s or more"

echo PASS
exit 0
