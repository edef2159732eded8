#!/bin/bash
# SPDX-License-Identifier: MIT
# starve.sh - a starved client is not a failed network: "ibtrs bench
# --verify" over two loopback paths (heartbeat timeout 1 s) is stopped
# with SIGSTOP for twice its heartbeat timeout while the server (timeout
# 4 s: it keeps sending heartbeats and waits for the client) goes on.
# After SIGCONT no path may be declared dead by the client: no heartbeat
# timeout, no path leaving "connected", no failover, every request done
# and verified. Prints what each side saw. This guards the behaviour end
# to end; on loopback the resumed process usually reads its sockets before
# its late tick, so it passes with the lateness rule off too: unit/stall
# is the test that fails without that rule.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

command -v python3 >/dev/null 2>&1 || skip "no python3 to read the JSON"

start_server srv --port 0 --hb-timeout 4000 --stats-file "$TMP/stats.json"
"$IBTRS" bench --path ip:127.0.0.1 --path ip:127.0.0.2,ip:127.0.0.1 \
	--port "$SRV_PORT" --verify --qd 8 --time 8 --hb-timeout 1000 \
	--json --events --interval-json >"$TMP/bench.json" \
	2>"$TMP/bench.err" &
BENCH=$!
PIDS+=("$BENCH")

# Running: its first one-second report (at most 10 s).
for ((i = 0; i < 100; i++)); do
	grep -q '^{' "$TMP/bench.err" 2>/dev/null && break
	kill -0 "$BENCH" 2>/dev/null || break
	sleep 0.1
done
grep -q '^{' "$TMP/bench.err" || fail "bench did not start: $(cat "$TMP/bench.err")"

# The stimulus: 2 s, twice the client's heartbeat timeout.
kill -STOP "$BENCH" || fail "SIGSTOP"
echo "client stopped for 2 s at $(date +%T.%N)"
sleep 2
kill -CONT "$BENCH" || fail "SIGCONT"
echo "client resumed at $(date +%T.%N)"

for ((i = 0; i < 300; i++)); do
	kill -0 "$BENCH" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$BENCH" 2>/dev/null && fail "bench still running 30 s later"
wait "$BENCH"
rc=$?
echo "client: exit $rc"
python3 - "$TMP/bench.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("client: ops %d errors %d verify_failures %d lost %d max_gap_ms %s" %
      (d["ops"], d["errors"], d["verify_failures"], d["lost"],
       d.get("max_gap_ms")))
for i, p in enumerate(d["paths"]):
    print("client: path %d %s: state %s ops %d failovers %d reconnects %d" %
          (i, p["addr"], p["state"], p["ops"], p["failovers"],
           p["reconnects"]))
for e in d["events"]:
    print("client event: %8.3f path %2d: %s" % (e["ts"], e["path"], e["msg"]))
PY
stop_server "$SRV_PID"
echo "server: $(cat "$TMP/stats.json")"
sed 's/^/server log: /' "$TMP/srv.err"

[ "$rc" -eq 0 ] || fail "bench exited with $rc: $(grep -v '^{' "$TMP/bench.err")"
python3 - "$TMP/bench.json" <<'PY' || fail "the client declared a path dead"
import json, sys
d = json.load(open(sys.argv[1]))
bad = [e["msg"] for e in d["events"]
       if "heartbeat timeout" in e["msg"] or "connected -> " in e["msg"]]
ok = (not bad and d["errors"] == 0 and d["verify_failures"] == 0 and
      d["lost"] == 0 and d["ops"] > 0 and
      all(p["failovers"] == 0 and p["reconnects"] == 0 for p in d["paths"]))
if bad:
    print("FAIL events:", bad, file=sys.stderr)
sys.exit(0 if ok else 1)
PY
echo PASS
exit 0
