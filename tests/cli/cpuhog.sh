#!/bin/bash
# SPDX-License-Identifier: MIT
# cpuhog.sh - a loaded host is not a failed network: "ibtrs bench
# --verify" over two loopback paths (heartbeat timeout 1 s) for 30 s
# beside four busy threads at normal priority, more than the CPUs of a
# small machine. No path may be declared dead (no heartbeat timeout, no
# path leaving "connected", no failover or reconnect) and every request
# must be done and verified. Prints the bench's figures and events.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

command -v python3 >/dev/null 2>&1 || skip "no python3 to read the JSON"

start_server srv --port 0 --quiet
# Four busy loops, each ending by itself after 32 s at the latest.
for i in 1 2 3 4; do
	timeout -k 1 32 bash -c 'while :; do :; done' &
	PIDS+=("$!")
done
run_bounded 90 "$IBTRS" bench --path ip:127.0.0.1 \
	--path ip:127.0.0.2,ip:127.0.0.1 --port "$SRV_PORT" --verify \
	--qd 16 --time 30 --hb-timeout 1000 --json --events --quiet \
	>"$TMP/bench.json" 2>"$TMP/bench.err"
rc=$?
echo "bench: exit $rc"
sed 's/^/  stderr: /' "$TMP/bench.err"
stop_server "$SRV_PID"
[ -s "$TMP/bench.json" ] || fail "no JSON from the bench"
python3 - "$TMP/bench.json" "$rc" <<'PY' || fail "a path was declared dead under CPU load"
import json, sys
d = json.load(open(sys.argv[1]))
print("bench: %.0f IOPS, %.2f MB/s, ops %d, errors %d, verify_failures %d, "
      "lost %d, max_gap_ms %s" % (d["iops"], d["mbps"], d["ops"], d["errors"],
                                  d["verify_failures"], d["lost"],
                                  d.get("max_gap_ms")))
for i, p in enumerate(d["paths"]):
    print("path %d: ops %d failovers %d reconnects %d hb_rtt_us %d" %
          (i, p["ops"], p["failovers"], p["reconnects"], p["hb_rtt_us"]))
for e in d["events"]:
    print("event %8.3f path %2d: %s" % (e["ts"], e["path"], e["msg"]))
false = [e["msg"] for e in d["events"]
         if "heartbeat timeout" in e["msg"] or "connected -> " in e["msg"]]
fo = sum(p["failovers"] + p["reconnects"] for p in d["paths"])
print("false failovers: %d (events %s)" % (fo, false))
ok = (sys.argv[2] == "0" and not false and fo == 0 and d["errors"] == 0 and
      d["verify_failures"] == 0 and d["lost"] == 0 and d["ops"] > 0 and
      all(p["ops"] > 0 for p in d["paths"]))
sys.exit(0 if ok else 1)
PY
echo PASS
exit 0
