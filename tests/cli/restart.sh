#!/bin/bash
# SPDX-License-Identifier: MIT
# restart.sh - a server killed (SIGKILL) and restarted on the same port and
# backing file under a verifying bench. The client must see a session loss
# (the restarted server answers with another incarnation), in its events
# and in "ibtrs status"; the requests in flight at the kill complete with
# ECONNRESET (unknown_outcome), none is replayed into the new server; no
# request fails otherwise, none is lost, every READ verifies; each server
# process counts 0 requests run twice; the bench exits 1 (unknown
# outcomes, see ibtrs-bench's help).
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

command -v python3 >/dev/null 2>&1 || skip "no python3 to read the JSON"

export IBTRS_RUNTIME_DIR
IBTRS_RUNTIME_DIR=$(mktemp -d "$TMP/rt.XXXXXX") || fail "mktemp"
disk=$TMP/disk

# json FILE EXPR: EXPR (Python, the JSON object as d) holds.
json() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)' "$1" "$2" 2>/dev/null
}

# client_json PID EXPR: EXPR holds for PID's client session (as c) in
# "ibtrs status --json".
client_json() {
	run_bounded 20 "$IBTRS" status --json 2>/dev/null </dev/null |
		python3 -c 'import json, sys
for p in json.load(sys.stdin):
    if p["pid"] == int(sys.argv[1]) and p["clients"]:
        c = p["clients"][0]
        sys.exit(0 if eval("(" + sys.argv[2] + ")") else 1)
sys.exit(1)' "$1" "$2" 2>/dev/null
}

start_server first --port 0 --quiet --backing-file "$disk" \
	--stats-file "$TMP/first.json"
first=$SRV_PID
port=$SRV_PORT

# Ended by SIGINT once the loss is seen and the second server ran
# requests: a slow (sanitizer, loaded) restart must not outlast the run.
"$IBTRS" bench --path ip:127.0.0.1 --port "$port" --verify --qd 16 \
	--time 240 --json --events >"$TMP/bench.json" 2>"$TMP/bench.err" &
bench=$!
PIDS+=("$bench")

# Under load, and the client knows the incarnation of its session.
for ((i = 0; i < 100; i++)); do
	json "$TMP/first.json" 'd["requests"] > 2000' &&
		client_json "$bench" 'c["incarnation"] != ""' && break
	sleep 0.1
done
client_json "$bench" 'c["incarnation"] != "" and c["session_losses"] == 0' ||
	fail "the bench's session has no incarnation"

kill -KILL "$first"
wait "$first" 2>/dev/null
# The port is free again once the killed process is gone.
for ((i = 0; i < 50; i++)); do
	"$IBTRS" server --port "$port" --quiet --backing-file "$disk" \
		--stats-file "$TMP/second.json" >"$TMP/second.out" \
		2>"$TMP/second.err" &
	second=$!
	PIDS+=("$second")
	for ((k = 0; k < 50; k++)); do
		grep -q "^listening on port $port\$" "$TMP/second.out" && break 2
		kill -0 "$second" 2>/dev/null || break
		sleep 0.1
	done
	sleep 0.1
done
grep -q "^listening on port $port\$" "$TMP/second.out" ||
	fail "the server did not restart on port $port: $(cat "$TMP/second.err")"

# The client rejoins and finds another incarnation: a session loss.
for ((i = 0; i < 100; i++)); do
	client_json "$bench" 'c["session_losses"] == 1' && break
	sleep 0.1
done
client_json "$bench" 'c["session_losses"] == 1 and
	"new session" in c["last_session_loss"]' ||
	fail "no session loss in ibtrs status"
run_bounded 20 "$IBTRS" status >"$TMP/status.txt" 2>&1 </dev/null
grep -q "  losses 1 " "$TMP/status.txt" ||
	fail "no session loss in the status table: $(cat "$TMP/status.txt")"
grep -q "last loss: server made a new session" "$TMP/status.txt" ||
	fail "no reason of the loss in the status table"

for ((i = 0; i < 300; i++)); do
	json "$TMP/second.json" 'd["requests"] > 100' && break
	kill -0 "$bench" 2>/dev/null || break
	sleep 0.1
done
kill -INT "$bench" 2>/dev/null
wait "$bench"
rc=$?
echo "bench: exit $rc: $(cat "$TMP/bench.json")"
sed 's/^/  stderr: /' "$TMP/bench.err" | head -8
json "$TMP/bench.json" 'd["session_losses"] == 1 and
	d["unknown_outcome"] >= 1 and d["replayed_after_loss"] == 0 and
	d["errors"] == 0 and d["lost"] == 0 and d["verify_failures"] == 0 and
	d["ops"] > 0 and
	any("session lost" in e["msg"] for e in d["events"])' ||
	fail "the bench did not report the session loss as documented"
[ "$rc" -eq 1 ] || fail "bench exited with $rc, expected 1 (unknown outcomes)"
unknown=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["unknown_outcome"])' "$TMP/bench.json")

stop_server "$second"
echo "first server: $(cat "$TMP/first.json")"
echo "second server: $(cat "$TMP/second.json")"
json "$TMP/first.json" 'd["duplicates"] == 0' ||
	fail "the first server ran a request twice"
json "$TMP/second.json" 'd["duplicates"] == 0 and d["requests"] > 0' ||
	fail "the second server ran a request twice, or none"
echo "PASS: 1 session loss, $unknown requests of unknown outcome, none replayed"
