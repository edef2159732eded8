#!/bin/bash
# SPDX-License-Identifier: MIT
# bench.sh - "ibtrs server" + "ibtrs bench --verify --json" over two
# loopback paths, for randwrite, randread and randrw with 4 KiB and 128 KiB requests;
# a path slowed by a fault shows "demoted" in the table; at the end a run
# where nothing completes (the report says n/a).
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

# check_json FILE: one valid JSON object with no errors, no verify failures,
# no lost request, ops > 0, and two paths that both carried requests and
# carry every per-path field.
check_json() {
	local f=$1
	if [ "$JSON" = jq ]; then
		jq -e . "$f" >/dev/null || return 1
		jq -e '(.errors == 0) and (.verify_failures == 0) and
			(.ops > 0) and (.ops == .read_ops + .write_ops) and
			(.iops > 0) and (.lat_us.p50 > 0) and
			(.lat_us.p50 <= .lat_us.p99) and
			(.lat_us.p99 <= .lat_us.p999) and
			(.lost == 0) and (.max_gap_ms | type == "number") and
			(.max_gap_ms >= 0) and (.policy == "min-inflight") and
			((.paths | length) == 2) and
			all(.paths[]; .ops > 0 and .ops == .rd_ops + .wr_ops and
				(.addr | type == "string") and
				(.state | type == "string") and .errors == 0 and
				(.failovers | type == "number") and
				(.reconnect_attempts | type == "number") and
				(.reconnects | type == "number") and
				(.hb_rtt_us | type == "number") and
				(.lat_us.p50 <= .lat_us.p99) and
				(.lat_us.p99 <= .lat_us.p999)) and
			(has("events") | not)' "$f" >/dev/null
	else
		python3 -m json.tool "$f" >/dev/null || return 1
		python3 - "$f" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = (d["errors"] == 0 and d["verify_failures"] == 0 and d["ops"] > 0
      and d["ops"] == d["read_ops"] + d["write_ops"] and d["iops"] > 0
      and 0 < d["lat_us"]["p50"] <= d["lat_us"]["p99"] <= d["lat_us"]["p999"]
      and d["lost"] == 0 and d["max_gap_ms"] >= 0
      and d["policy"] == "min-inflight" and "events" not in d
      and len(d["paths"]) == 2
      and all(p["ops"] > 0 and p["ops"] == p["rd_ops"] + p["wr_ops"]
              and isinstance(p["addr"], str) and isinstance(p["state"], str)
              and p["errors"] == 0 and p["failovers"] >= 0
              and p["reconnect_attempts"] >= 0 and p["reconnects"] >= 0
              and p["hb_rtt_us"] >= 0
              and p["lat_us"]["p50"] <= p["lat_us"]["p99"]
                  <= p["lat_us"]["p999"]
              for p in d["paths"]))
sys.exit(0 if ok else 1)
PY
	fi
}

start_server srv --port 0 --quiet
port=$SRV_PORT
echo "server on port $port"

for bs in 4096 131072; do
	for rw in randwrite randread randrw; do
		out=$TMP/bench-$rw-$bs.json
		err=$TMP/bench-$rw-$bs.err
		run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 \
			--path ip:127.0.0.2 --port "$port" --rw "$rw" \
			--bs "$bs" --time 2 --verify --json >"$out" 2>"$err"
		rc=$?
		echo "rw=$rw bs=$bs: exit $rc: $(cat "$out")"
		[ -s "$err" ] && sed 's/^/  stderr: /' "$err"
		[ "$rc" -eq 0 ] || fail "bench rw=$rw bs=$bs exited with $rc"
		[ "$(wc -l <"$out")" -eq 1 ] ||
			fail "bench rw=$rw bs=$bs: stdout is not one line"
		check_json "$out" || fail "bench rw=$rw bs=$bs: bad result"
		# The request mix must be what was asked for.
		case $rw in
		randwrite) want='.read_ops == 0' ;;
		randread) want='.write_ops == 0' ;;
		randrw) want='.read_ops > 0 and .write_ops > 0' ;;
		esac
		if [ "$JSON" = jq ]; then
			jq -e "$want" "$out" >/dev/null ||
				fail "bench rw=$rw bs=$bs: wrong mix"
		fi
	done
done

# Session options, the event log and the per-second JSON lines.
out=$TMP/opts.json
err=$TMP/opts.err
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --path ip:127.0.0.2 \
	--port "$port" --time 2.5 --verify --json --events --interval-json \
	--policy rr --hb-timeout 2000 --reconnect-delay 2 --max-reconnects 3 \
	--failover-timeout 5000 >"$out" 2>"$err"
rc=$?
echo "options: exit $rc: $(cat "$out")"
sed 's/^/  stderr: /' "$err"
[ "$rc" -eq 0 ] || fail "bench with session options exited with $rc"
[ "$(wc -l <"$err")" -eq 2 ] || fail "--interval-json: not 2 lines in 2.5 s"
if [ "$JSON" = jq ]; then
	jq -e '.policy == "round-robin" and .lost == 0 and
		(.events | length) > 0 and
		all(.events[]; (.ts | type == "number") and .ts > 1e9 and
			(.path | type == "number") and
			(.msg | type == "string")) and
		any(.events[]; .path == -1 and (.msg | test("open")))' \
		"$out" >/dev/null || fail "bad policy or event log"
	jq -se 'length == 2 and all(.[]; (.t | type == "number") and
		.iops > 0 and .p99_us > 0 and .p99_us < 1e6 and
		.max_us >= .p99_us and
		(.paths | length) == 2 and
		all(.paths[]; . > 0))' "$err" >/dev/null ||
		fail "bad --interval-json lines"
else
	python3 - "$out" "$err" <<'PY' || fail "bad policy, event log or interval lines"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["events"]
ok = (d["policy"] == "round-robin" and d["lost"] == 0 and len(ev) > 0
      and all(e["ts"] > 1e9 and isinstance(e["path"], int)
              and isinstance(e["msg"], str) for e in ev)
      and any(e["path"] == -1 and "open" in e["msg"] for e in ev))
lines = [json.loads(l) for l in open(sys.argv[2])]
ok = ok and len(lines) == 2 and all(
    l["iops"] > 0 and 0 < l["p99_us"] < 1e6 and l["max_us"] >= l["p99_us"]
    and len(l["paths"]) == 2
    and all(p > 0 for p in l["paths"])
    for l in lines)
sys.exit(0 if ok else 1)
PY
fi

# The human table, several threads, one path.
out=$TMP/table.out
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--threads 4 --qd 16 --time 1 --verify --quiet >"$out" 2>"$TMP/table.err"
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || fail "bench with a table exited with $rc"
grep -q IOPS "$out" || fail "no IOPS in the table"
grep -q 'verify failures: 0$' "$out" || fail "no verify summary"
grep -Eq '^CPU per request: client [0-9.]+ us .*, server [0-9.]+ us' "$out" ||
	fail "no CPU time per request of both sides in the table"
grep -q 'lost 0,' "$out" || fail "no lost count in the table"
grep -Eq '^path +state +ops +failovers +reconnects +p99 us +max us$' "$out" ||
	fail "no per-path columns in the table"
[ -s "$TMP/table.err" ] && fail "--quiet bench wrote on stderr"

# Both ways of keeping the queue full, with data verification: callback
# (the default) submits from the completion callback, thread only from the
# submitter threads. Both report the CPU time of both sides.
for mode in callback thread; do
	out=$TMP/submit-$mode.json
	run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
		--rw randrw --threads 2 --qd 32 --time 1.5 --verify --json \
		--submit "$mode" >"$out" 2>"$TMP/submit-$mode.err"
	rc=$?
	echo "submit $mode: exit $rc: $(cat "$out")"
	[ "$rc" -eq 0 ] || fail "bench --submit $mode exited with $rc"
	if [ "$mode" = callback ]; then
		want='.callback_submits * 2 > .ops'
	else
		want='.callback_submits == 0'
	fi
	want="$want and .submit == \"$mode\" and .lost == 0 and
		.verify_failures == 0 and .cpu.client.us_per_req > 0 and
		.cpu.server.us_per_req > 0 and
		.cpu.client.user_s + .cpu.client.sys_s > 0"
	if [ "$JSON" = jq ]; then
		jq -e "$want" "$out" >/dev/null ||
			fail "bench --submit $mode: wrong result"
	else
		python3 - "$out" "$mode" <<'PY' || fail "bench --submit $mode: wrong result"
import json, sys
d = json.load(open(sys.argv[1]))
c = d["cpu"]
ok = ((d["callback_submits"] * 2 > d["ops"]) if sys.argv[2] == "callback"
      else d["callback_submits"] == 0)
ok = (ok and d["submit"] == sys.argv[2] and d["lost"] == 0
      and d["verify_failures"] == 0 and c["client"]["us_per_req"] > 0
      and c["server"]["us_per_req"] > 0)
sys.exit(0 if ok else 1)
PY
	fi
done

# A path slowed by an injected delay is demoted: the table's state column
# says "demoted" for it once the library has demoted it (polled on the
# control socket, 30 s at most), then SIGINT ends the run.
out=$TMP/demoted.out
IBTRS_FAULT=1:delay=20 "$IBTRS" bench --path ip:127.0.0.1 \
	--path ip:127.0.0.2,ip:127.0.0.1 --port "$port" --qd 32 --time 120 \
	--quiet >"$out" 2>"$TMP/demoted.err" &
bpid=$!
PIDS+=("$bpid")
for ((i = 0; i < 300; i++)); do
	run_bounded 20 "$IBTRS" status --json --pid "$bpid" 2>/dev/null |
		grep -q '"demoted": *true' && break
	kill -0 "$bpid" 2>/dev/null || break
	sleep 0.1
done
kill -INT "$bpid" 2>/dev/null
wait "$bpid"
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || fail "bench with a slowed path exited with $rc: $(cat "$TMP/demoted.err")"
grep -Eq '^127\.0\.0\.2->127\.0\.0\.1:[0-9]+ +demoted ' "$out" ||
	fail "the table does not mark the slowed path demoted"
grep -Eq '^127\.0\.0\.1:[0-9]+ +connected ' "$out" ||
	fail "the table does not show the healthy path connected"
stop_server "$SRV_PID"

# A null target (nothing stored) with busy polling on both ends and two
# connections per path: the requests complete, the server keeps no data.
start_server null --port 0 --quiet --null --busy-poll 200
port=$SRV_PORT
out=$TMP/null.json
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--rw randrw --qd 32 --time 1.5 --io-cons 2 --busy-poll 200 --json \
	>"$out" 2>"$TMP/null.err"
rc=$?
echo "null target: exit $rc: $(cat "$out")"
[ "$rc" -eq 0 ] || fail "bench against a --null server exited with $rc"
grep -q '"ops":[1-9]' "$out" && grep -q '"errors":0,' "$out" &&
	grep -q '"lost":0,' "$out" ||
	fail "bench against a --null server: wrong result"
# --verify fails there: a WRITE is not kept.
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--rw randrw --qd 8 --time 1 --verify --quiet >/dev/null 2>&1
rc=$?
[ "$rc" -eq 1 ] || fail "--verify against a --null server exited with $rc, not 1"
stop_server "$SRV_PID"

# Nothing completes: the server may not grow its export past 512 bytes
# (RLIMIT_FSIZE, SIGXFSZ ignored), so every WRITE fails with EFBIG. What
# has no request to divide by is "n/a" in the report, null in the JSON,
# never -1; the exit status is 1 for the failed requests.
img=$TMP/efbig.img
truncate -s 64M "$img" || fail "truncate"
(
	trap '' XFSZ
	ulimit -f 1
	exec "$IBTRS" server --port 0 --quiet --export big="$img"
) >"$TMP/efbig.out" 2>"$TMP/efbig.err" &
SRV_PID=$!
PIDS+=("$SRV_PID")
port=
for ((i = 0; i < 100; i++)); do
	port=$(sed -n 's/^listening on port \([0-9][0-9]*\)$/\1/p' \
		"$TMP/efbig.out" 2>/dev/null)
	[ -n "$port" ] && break
	kill -0 "$SRV_PID" 2>/dev/null || break
	sleep 0.1
done
[ -n "$port" ] || fail "the EFBIG server did not start: $(cat "$TMP/efbig.err")"
out=$TMP/none.out
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--export big --rw write --time 1 --quiet >"$out" 2>"$TMP/none.err"
rc=$?
cat "$out"
[ "$rc" -eq 1 ] || fail "bench where nothing completes exited with $rc, not 1"
grep -Eq '^  IOPS 0, 0\.00 MB/s, 0 ops, errors [1-9][0-9]*,' "$out" ||
	fail "nothing completed: not 0 ops with errors"
grep -qx '  clat (us): n/a, no request completed' "$out" ||
	fail "nothing completed: no n/a latency"
grep -Eq '^CPU per request: client n/a \(user [0-9.]+ s, sys [0-9.]+ s\), server n/a \(user ' \
	"$out" || fail "nothing completed: CPU per request not n/a"
grep -q -- '-1' "$out" && fail "nothing completed: a -1 in the report"
out=$TMP/none.json
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--export big --rw write --time 1 --json >"$out" 2>"$TMP/none.err"
rc=$?
echo "nothing completes: exit $rc: $(cat "$out")"
[ "$rc" -eq 1 ] || fail "bench --json where nothing completes exited with $rc"
if [ "$JSON" = jq ]; then
	jq -e '.ops == 0 and .errors > 0 and .iops == 0 and
		.cpu.client.us_per_req == null and
		.cpu.server.us_per_req == null and
		.lat_us.p99 == null and .lat_us.max == null' "$out" >/dev/null ||
		fail "nothing completed: wrong JSON"
else
	python3 - "$out" <<'PY' || fail "nothing completed: wrong JSON"
import json, sys
d = json.load(open(sys.argv[1]))
ok = (d["ops"] == 0 and d["errors"] > 0 and d["iops"] == 0
      and d["cpu"]["client"]["us_per_req"] is None
      and d["cpu"]["server"]["us_per_req"] is None
      and d["lat_us"]["p99"] is None and d["lat_us"]["max"] is None)
sys.exit(0 if ok else 1)
PY
fi
stop_server "$SRV_PID"
echo PASS
exit 0
