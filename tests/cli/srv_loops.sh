#!/bin/bash
# SPDX-License-Identifier: MIT
# srv_loops.sh - "ibtrs server --loops 3" runs three loop threads
# (ibtrs-srv/0 to /2); six sessions of one "ibtrs bench --sessions 6"
# are spread over them, two each, as "ibtrs status --json" shows (each
# server session's "loop", the context's "loops"; the table's "loop" and
# "loops"), and the bench
# completes with every request verified. Without --loops the server
# has one loop per online CPU.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

command -v python3 >/dev/null 2>&1 || skip "no python3 to read the JSON"

export IBTRS_RUNTIME_DIR
IBTRS_RUNTIME_DIR=$(mktemp -d "$TMP/rt.XXXXXX") || fail "mktemp"

start_server srv --port 0 --listen ip:127.0.0.1 --loops 3 --quiet

# loops_named: the server's threads named ibtrs-srv/<i>
loops_named() {
	cat /proc/"$SRV_PID"/task/*/comm 2>/dev/null | grep -c '^ibtrs-srv/'
}
for ((i = 0; i < 100; i++)); do
	[ "$(loops_named)" = 3 ] && break
	sleep 0.1
done
[ "$(loops_named)" = 3 ] || fail "not 3 server loop threads: $(loops_named)"

"$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" --sessions 6 \
	--verify --qd 6 --time 30 --json --quiet >"$TMP/b.json" \
	2>"$TMP/b.err" &
bench=$!
PIDS+=("$bench")

# spread: the server shows 3 loops and its 6 sessions 2 on each
spread() {
	run_bounded 20 "$IBTRS" status --json --pid "$SRV_PID" 2>/dev/null \
		</dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    for s in p["servers"]:
        loops = [x["loop"] for x in s.get("sessions", [])]
        print(s.get("loops"), sorted(loops))
        sys.exit(0 if s.get("loops") == 3 and
                 sorted(loops) == [0, 0, 1, 1, 2, 2] else 1)
sys.exit(1)'
}
for ((i = 0; i < 200; i++)); do
	spread >"$TMP/spread" && break
	kill -0 "$bench" 2>/dev/null || fail "the bench is gone: $(cat "$TMP/b.err")"
	sleep 0.1
done
echo "server loops and its sessions' loops: $(cat "$TMP/spread")"
spread >/dev/null || fail "sessions not spread: $(cat "$TMP/spread")"
# The table says so too: the context's loops, each session's loop.
run_bounded 20 "$IBTRS" status --pid "$SRV_PID" >"$TMP/st" 2>&1 </dev/null
grep -Eq '^  server port [0-9]+ .* loops 3$' "$TMP/st" ||
	fail "status: no loops on the server line: $(cat "$TMP/st")"
[ "$(grep -Ec '^    session .*  loop [0-2]$' "$TMP/st")" = 6 ] ||
	fail "status: not six sessions with their loop: $(cat "$TMP/st")"
kill -TERM "$bench"
wait "$bench"
rc=$?
[ "$rc" -eq 0 ] || fail "bench: exit $rc: $(cat "$TMP/b.err")"
stop_server "$SRV_PID"

# Without --loops: one loop per online CPU ("ibtrs-srv" alone for one).
cpus=$(getconf _NPROCESSORS_ONLN)
start_server dflt --port 0 --listen ip:127.0.0.1 --quiet
loops_all() {
	cat /proc/"$SRV_PID"/task/*/comm 2>/dev/null | grep -Ec '^ibtrs-srv(/[0-9]+)?$'
}
for ((i = 0; i < 100; i++)); do
	[ "$(loops_all)" = "$cpus" ] && break
	sleep 0.1
done
[ "$(loops_all)" = "$cpus" ] ||
	fail "default: $(loops_all) server loop threads, not one per CPU ($cpus)"
stop_server "$SRV_PID"
echo "ok"
