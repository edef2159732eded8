#!/bin/bash
# SPDX-License-Identifier: MIT
# bench_sessions.sh - "ibtrs bench --sessions N": N verified sessions in
# one process on shared loop threads (--loops M, by default the online
# CPUs capped by N), one JSON report with each session's p99; the loop
# threads are the process's M, named ibtrs-clt/0.., not one a session;
# --loops 0 gives each session its own; SIGTERM ends every session; bad
# combinations are usage errors.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

command -v python3 >/dev/null 2>&1 || skip "python3 to read the JSON output"

# threads PID PATTERN: threads of PID whose name matches the grep PATTERN
threads() {
	cat /proc/"$1"/task/*/comm 2>/dev/null | grep -c "$2"
}

# wait_threads PID PATTERN N: until N such threads, at most 30 s
wait_threads() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$(threads "$1" "$2")" -eq "$3" ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# check FILE SESSIONS LOOPS: a clean verified run of that many sessions
check() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n, loops = int(sys.argv[2]), int(sys.argv[3])
p = d["sess_p99_us"]
ok = (d["errors"] == 0 and d["verify_failures"] == 0 and d["lost"] == 0
      and d["ops"] > 0 and d["read_ops"] > 0 and d["write_ops"] > 0
      and d["sessions"] == n and d["loops"] == loops and len(p) == n
      and all(v > 0 for v in p)
      and d["sess_p99_worst_us"] == max(p)
      and min(p) <= d["sess_p99_median_us"] <= max(p)
      and d["qd"] <= d["qd_requested"])
if not ok:
    print("bad result:", d, file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

start_server srv --port 0 --quiet
port=$SRV_PORT
cpus=$(getconf _NPROCESSORS_ONLN)
def=$((cpus < 8 ? cpus : 8))

# 8 sessions on the default loops, then on 3, then one loop each.
for loops in default 3 0; do
	out=$TMP/s-$loops.json
	if [ "$loops" = default ]; then
		args=()
		want=$def
	else
		args=(--loops "$loops")
		want=$loops
	fi
	# Not under timeout(1): its threads are looked at. cli_cleanup
	# ends it if the test fails.
	"$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
		--sessions 8 "${args[@]}" --rw randrw --qd 16 --time 3 \
		--verify --json >"$out" 2>"$TMP/s.err" &
	pid=$!
	PIDS+=("$pid")
	# Every session open: its threads as the option says.
	if [ "$want" -gt 0 ]; then
		wait_threads "$pid" '^ibtrs-clt/' "$want" ||
			fail "--loops $loops: not $want shared loop threads"
		[ "$(threads "$pid" '^ibtrs-clt$')" -eq 0 ] ||
			fail "--loops $loops: a session has a loop of its own"
	else
		wait_threads "$pid" '^ibtrs-clt$' 8 ||
			fail "--loops 0: not a loop thread a session"
	fi
	wait "$pid"
	rc=$?
	echo "--sessions 8 --loops $loops: exit $rc: $(cat "$out")"
	[ "$rc" -eq 0 ] || fail "--loops $loops: exit $rc: $(cat "$TMP/s.err")"
	check "$out" 8 "$want" || fail "--loops $loops: bad result"
done

# The table says so too.
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--sessions 3 --loops 2 --rw randread --time 1 --quiet >"$TMP/t.out" ||
	fail "table run failed"
grep -q '^sessions: 3 on 2 loop threads shared; p99 (us) of a session: median' \
	"$TMP/t.out" || fail "no sessions line in the table: $(cat "$TMP/t.out")"

# On the control socket every session of the process shows, each with
# the busy polling it asked for, which is its shared loop's. Then SIGTERM
# ends every session, within the 2 s of the tool.
export IBTRS_RUNTIME_DIR
IBTRS_RUNTIME_DIR=$(mktemp -d "$TMP/rt.XXXXXX") || fail "mktemp"
IBTRS_CONTROL=1 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--sessions 6 --loops 2 --busy-poll 300 --rw randread --time 600 \
	--json >"$TMP/sig.json" 2>"$TMP/sig.err" &
pid=$!
PIDS+=("$pid")
wait_threads "$pid" '^ibtrs-clt/' 2 || fail "the long run did not start"
# The sessions open one after the other: 30 s at most for all six.
for ((i = 0; i < 60; i++)); do
	run_bounded 20 "$IBTRS" status --json >"$TMP/st.json" </dev/null ||
		fail "ibtrs status failed"
	python3 - "$TMP/st.json" "$pid" <<'PY' && break
import json, sys
procs = json.load(open(sys.argv[1]))
me = [p for p in procs if p["pid"] == int(sys.argv[2])]
sys.exit(0 if len(me) == 1 and len(me[0]["clients"]) == 6 else 1)
PY
	sleep 0.5
done
python3 - "$TMP/st.json" "$pid" <<'PY' || fail "bad status of the sessions"
import json, sys
procs = json.load(open(sys.argv[1]))
me = [p for p in procs if p["pid"] == int(sys.argv[2])]
assert len(me) == 1, procs
c = me[0]["clients"]
assert len(c) == 6, c
assert all(x["poll"]["busy_poll_us"] == 300 for x in c), c
PY
kill -TERM "$pid"
for ((i = 0; i < 50; i++)); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$pid" 2>/dev/null && fail "SIGTERM did not end the sessions in 5 s"
wait "$pid"
echo "SIGTERM: exit $?: $(cat "$TMP/sig.json")"
python3 - "$TMP/sig.json" <<'PY' || fail "bad result after SIGTERM"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["sessions"] == 6 and d["ops"] > 0 and d["lost"] == 0 else 1)
PY

expect 2 bench --path ip:127.0.0.1 --port "$port" --sessions 0
expect 2 bench --path ip:127.0.0.1 --port "$port" --sessions 1025
expect 2 bench --path ip:127.0.0.1 --port "$port" --loops 2
expect 2 bench --path ip:127.0.0.1 --port "$port" --sessions 2 --loops 65
expect 2 bench --path ip:127.0.0.1 --port "$port" --sessions 2 --export x
expect 2 bench --path ip:127.0.0.1 --port "$port" --sessions 2 --events

stop_server "$SRV_PID"
echo "PASS"
