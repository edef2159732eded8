#!/bin/bash
# SPDX-License-Identifier: MIT
# srv_loops.sh - "ibtrs server --loops 3" runs three loop threads
# (ibtrs-srv/0 to /2); six sessions of one "ibtrs bench --sessions 6"
# are spread over them, two each, as "ibtrs status --json" shows (each
# server session's "loop", the context's "loops"), and the bench
# completes with every request verified.
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
kill -TERM "$bench"
wait "$bench"
rc=$?
[ "$rc" -eq 0 ] || fail "bench: exit $rc: $(cat "$TMP/b.err")"
stop_server "$SRV_PID"
echo "ok"
