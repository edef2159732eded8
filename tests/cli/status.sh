#!/bin/bash
# SPDX-License-Identifier: MIT
# status.sh - "ibtrs status" and the control commands against a running
# server and a verifying bench over two loopback paths: the JSON, table and
# Prometheus outputs, the latency of the last interval under an injected
# delay, a policy change, a path disconnected (its I/O moves to the other
# path) and reconnected, a stats reset, stale and silent control sockets,
# a fake process with a demoted path and exact histograms, bad input; at
# the end the bench has no errors and no socket is left.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

command -v python3 >/dev/null 2>&1 || skip "python3 is needed to read the output"

# Our own control directory: no other process of the machine is seen.
export IBTRS_RUNTIME_DIR
IBTRS_RUNTIME_DIR=$(mktemp -d "$TMP/rt.XXXXXX") || fail "mktemp"
unset IBTRS_CONTROL
# Long enough for the steps below under sanitizers; stopped by SIGINT.
BENCH_TIME=${BENCH_TIME:-60}
SESS=cli-status-$$

# q.py MODE ARGS < status JSON: prints what MODE asks for, see below.
cat >"$TMP/q.py" <<'PY'
import json, sys
procs = json.load(sys.stdin)
mode = sys.argv[1]
def client(pid, sess):
    for p in procs:
        if p["pid"] == int(pid):
            for c in p["clients"]:
                if c["sessname"] == sess:
                    return c
    sys.exit("no session %s in process %s" % (sess, pid))
if mode == "check":          # check BENCH_PID SRV_PID SESS
    c = client(sys.argv[2], sys.argv[4])
    assert len(c["paths"]) == 2, c
    assert all(p["state"] == "connected" for p in c["paths"]), c
    srv = [p for p in procs if p["pid"] == int(sys.argv[3])]
    assert len(srv) == 1 and len(srv[0]["servers"]) == 1, procs
    names = [s["sessname"] for s in srv[0]["servers"][0]["sessions"]]
    assert sys.argv[4] in names, names
    assert srv[0]["servers"][0]["requests"] > 0, srv
    # Both ends poll adaptively, at most 2 ms: under load the window
    # opens and the loops poll between events.
    for poll in (c["poll"], srv[0]["servers"][0]["poll"]):
        assert poll["busy_poll_us"] == 2000 and poll["adaptive"], poll
        assert 0 <= poll["window_us"] <= 2000, poll
        assert poll["empty_polls"] > 0, poll
        assert "kicks" in poll, poll
elif mode == "policy":       # policy PID SESS
    print(client(sys.argv[2], sys.argv[3])["policy"])
elif mode == "state":        # state PID SESS IDX
    print(client(sys.argv[2], sys.argv[3])["paths"][int(sys.argv[4])]["state"])
elif mode == "ops":          # ops PID SESS: the ops of every path
    print(" ".join(str(p["rd_ops"] + p["wr_ops"])
                   for p in client(sys.argv[2], sys.argv[3])["paths"]))
elif mode == "pids":         # pids: the pids that answered
    print(" ".join(str(p["pid"]) for p in procs))
PY

# prom.py < exposition text: every line is a comment or name{labels} value,
# HELP and TYPE come once per family before its samples; a histogram's
# buckets (NAME_bucket, le) do not decrease and the one of le="+Inf" is
# its NAME_count; argv: families that must be there.
cat >"$TMP/prom.py" <<'PY'
import re, sys
sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)'
                    r'\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\}'
                    r' (-?[0-9.e+-]+|NaN|[+-]Inf)$')
typed, helped, seen = {}, set(), set()
buckets, counts = {}, {}
for n, line in enumerate(sys.stdin, 1):
    line = line.rstrip("\n")
    if not line:
        continue
    if line.startswith("# HELP "):
        name = line.split()[2]
        assert name not in helped, "HELP twice: %s" % name
        helped.add(name)
        continue
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split()
        assert name not in typed, "TYPE twice: %s" % name
        assert kind in ("counter", "gauge", "summary", "histogram"), line
        typed[name] = kind
        continue
    assert not line.startswith("#"), "line %d: %s" % (n, line)
    m = sample.match(line)
    assert m, "line %d does not parse: %s" % (n, line)
    name, labels, value = m.group(1), m.group(2), float(m.group(3))
    for sfx in ("_bucket", "_count"):
        base = name[:-len(sfx)]
        if name.endswith(sfx) and typed.get(base) == "histogram":
            le = re.search(r'(?:^|,)le="([^"]*)"', labels)
            key = (base, re.sub(r',?le="[^"]*"', "", labels))
            if sfx == "_bucket":
                assert le, "line %d: a bucket without le" % n
                b = buckets.setdefault(key, [])
                assert not b or b[-1] <= value, "line %d: bucket decreases" % n
                b.append(value)
                if le.group(1) == "+Inf":
                    counts[key] = value
            else:
                assert counts.get(key) == value, \
                    "line %d: _count is not the +Inf bucket" % n
            name = base
    assert name in typed and name in helped, "no TYPE/HELP: %s" % name
    seen.add(name)
missing = [f for f in sys.argv[1:] if f not in seen]
assert not missing, "missing families: %s" % missing
PY

status_json() {
	run_bounded 20 "$IBTRS" status --json 2>"$TMP/st.err" </dev/null
}

# q MODE ARGS: ask "ibtrs status --json" and q.py.
q() {
	status_json | python3 "$TMP/q.py" "$@"
}

# wait_state IDX STATE: path IDX of the bench's session reaches STATE
# within 10 s.
wait_state() {
	local i st
	for ((i = 0; i < 100; i++)); do
		st=$(q state "$BENCH_PID" "$SESS" "$1" 2>/dev/null)
		[ "$st" = "$2" ] && return 0
		sleep 0.1
	done
	fail "path $1 is '$st', not '$2'"
}

# ok CMD...: exit 0, nothing on stderr; stdout in $TMP/out.
ok() {
	run_bounded 40 "$IBTRS" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null ||
		fail "ibtrs $*: exit $?: $(cat "$TMP/err")"
	[ -s "$TMP/err" ] && fail "ibtrs $*: wrote on stderr: $(cat "$TMP/err")"
	echo "[$SECONDS s] ibtrs $*: $(head -c 200 "$TMP/out")"
}

# A socket left by a process killed with SIGKILL (sets STALE_PID); with
# "listen" the process stays alive and never answers (sets SILENT_PID).
python_socket() {
	local mode=$1 out=$TMP/py-$RANDOM i pid
	python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind(os.path.join(sys.argv[1], "%d.sock" % os.getpid()))
s.listen(16)
print("ready", flush=True)
time.sleep(120)
' "$IBTRS_RUNTIME_DIR" >"$out" &
	pid=$!
	PIDS+=("$pid")
	for ((i = 0; i < 100; i++)); do
		grep -q ready "$out" 2>/dev/null && break
		sleep 0.1
	done
	[ -S "$IBTRS_RUNTIME_DIR/$pid.sock" ] || fail "python did not bind"
	if [ "$mode" = listen ]; then
		SILENT_PID=$pid
	else
		kill -KILL "$pid"
		wait "$pid" 2>/dev/null
		STALE_PID=$pid
	fi
}

# Nothing runs yet.
ok status
grep -qx "no ibtrs processes in $IBTRS_RUNTIME_DIR" "$TMP/out" || fail "empty status: $(cat "$TMP/out")"
ok status --json
[ "$(cat "$TMP/out")" = "[]" ] || fail "empty status --json: $(cat "$TMP/out")"

start_server srv --port 0 --quiet --busy-poll 2000 --busy-poll-adaptive
"$IBTRS" bench --path ip:127.0.0.1 --path ip:127.0.0.2,ip:127.0.0.1 \
	--port "$SRV_PORT" --verify --time "$BENCH_TIME" --json --quiet \
	--busy-poll 2000 --busy-poll-adaptive \
	--sessname "$SESS" >"$TMP/bench.json" 2>"$TMP/bench.err" &
BENCH_PID=$!
PIDS+=("$BENCH_PID")

# Both processes answer, the bench with its session of two paths.
for ((i = 0; i < 100; i++)); do
	status_json | python3 "$TMP/q.py" check "$BENCH_PID" "$SRV_PID" \
		"$SESS" 2>/dev/null && break
	kill -0 "$BENCH_PID" 2>/dev/null || fail "bench died: $(cat "$TMP/bench.err")"
	sleep 0.1
done
status_json | python3 "$TMP/q.py" check "$BENCH_PID" "$SRV_PID" "$SESS" ||
	fail "status --json: $(status_json)"
ok status --json
python3 -m json.tool "$TMP/out" >/dev/null || fail "status --json does not parse"
[ "$(wc -l <"$TMP/out")" -eq 1 ] || fail "status --json is not one line"
ok status --format json
python3 -m json.tool "$TMP/out" >/dev/null || fail "--format json does not parse"

# The table: the session, both paths, the server.
ok status
cat "$TMP/out"
grep -q "^process $BENCH_PID " "$TMP/out" || fail "table: no bench process"
grep -q "^process $SRV_PID " "$TMP/out" || fail "table: no server process"
grep -q "session $SESS  policy" "$TMP/out" || fail "table: no client session"
grep -Eq "^ +0  connected  127\.0\.0\.1:$SRV_PORT " "$TMP/out" ||
	fail "table: no path 0"
grep -Eq "^ +1  connected  127\.0\.0\.2->127\.0\.0\.1:$SRV_PORT " "$TMP/out" ||
	fail "table: no path 1"
grep -q "server port $SRV_PORT " "$TMP/out" || fail "table: no server"
grep -q "last events:" "$TMP/out" || fail "table: no events"
# 100 columns by default, with the rate of the last interval per path;
# --wide adds the cumulative counters.
awk -v f="$TMP/out" 'length($0) > 100 { print "too wide: " $0; bad = 1 } END { exit bad }' \
	"$TMP/out" || fail "table wider than 100 columns"
grep -Eq "^ +IDX +STATE +SRC->DST +INFLT +IOPS +MB/S +ERR +FAILOV +HB-RTT +P99$" "$TMP/out" ||
	fail "table: not the narrow columns"
grep -Eq "^ +0  connected  127\.0\.0\.1:$SRV_PORT +[0-9]+ +[0-9.]+k? +[0-9]+\.[0-9] " "$TMP/out" ||
	fail "table: no rate on path 0"
grep -Eq "^ +0  connected  127\.0\.0\.1:$SRV_PORT +[0-9]+ +0 +0\.0 " "$TMP/out" &&
	fail "table: path 0 carries nothing in the last interval"
ok status --wide
grep -Eq "^ +IDX +STATE +SRC->DST +INFLT +IOPS +MB/S +RD-OPS +RD-BYTES +WR-OPS +WR-BYTES +ERR +FAILOV +RECON +HB-RTT +P50 +P99 +MAX +ALL-P50 +ALL-P99 +ALL-P99\.9 +ALL-MAX$" \
	"$TMP/out" || fail "status --wide: not every column"
grep -Eq "^    session $SESS \([0-9a-f]{8}\)(  loop [0-9]+)?$" "$TMP/out" ||
	fail "status: the server's session has no UUID to tell it apart"

# Prometheus.
ok status --format prometheus
python3 "$TMP/prom.py" ibtrs_path_ops_total ibtrs_path_bytes_total \
	ibtrs_path_inflight ibtrs_path_errors_total ibtrs_path_failovers_total \
	ibtrs_path_reconnects_total ibtrs_path_state ibtrs_path_hb_rtt_seconds \
	ibtrs_path_latency_seconds ibtrs_path_request_duration_seconds \
	ibtrs_server_requests_total \
	ibtrs_server_replays_total <"$TMP/out" || fail "prometheus output"
grep -q "^ibtrs_path_ops_total{pid=\"$BENCH_PID\",session=\"$SESS\",path=\"1\",.*dir=\"read\"} [1-9]" \
	"$TMP/out" || fail "prometheus: no read ops of path 1"
grep -q "^ibtrs_path_request_duration_seconds_count{pid=\"$BENCH_PID\",session=\"$SESS\",path=\"1\",.*} [1-9]" \
	"$TMP/out" || fail "prometheus: no latency histogram of path 1"
grep -q "^ibtrs_path_state{.*path=\"0\".*state=\"connected\"} 1$" "$TMP/out" ||
	fail "prometheus: path 0 not connected"
grep -q "^ibtrs_server_requests_total{pid=\"$SRV_PID\",port=\"$SRV_PORT\"} [1-9]" \
	"$TMP/out" || fail "prometheus: no server requests"

# Bad input that needs the session.
expect 1 policy "$SESS" rr --pid "$SRV_PID"
expect 1 path remove "$SESS" 9

# A 20 ms delay on path 1: the table's P99 is that of the last interval
# (two reads of the histograms 0.5 s apart), so it shows the delay at once,
# while the percentile since the start (ALL-P99), diluted by the fast
# requests before, stays below it (with min-inflight: under round robin
# the delay holds back path 0 as well).
# us VALUE: a latency of the table in microseconds.
us() {
	awk -v v="$1" 'BEGIN {
		n = v + 0
		if (v ~ /us$/) print int(n); else if (v ~ /ms$/) print int(n * 1000)
		else if (v ~ /s$/) print int(n * 1000000); else print -1 }'
}
ok policy "$SESS" min-inflight
# The cumulative P99 before the delay: only below it can the delay show in
# the interval's and not (yet) in the cumulative one; a host loaded enough
# to run slower than 20 ms a request already has both above it.
run_bounded 20 "$IBTRS" status --wide >"$TMP/wide" 2>/dev/null </dev/null
allp99_before=$(awk '$1 == 1 && NF == 21 { print $19 }' "$TMP/wide")
ok fault "$SESS" 1 delay 20
got=
for ((i = 0; i < 200; i++)); do
	run_bounded 20 "$IBTRS" status --wide >"$TMP/wide" 2>/dev/null </dev/null
	# IDX STATE SRC->DST ... HB-RTT P50 P99 MAX ALL-P50 ALL-P99 ...
	read -r ip99 allp99 <<<"$(awk '$1 == 1 && NF == 21 { print $16, $19 }' "$TMP/wide")"
	# 18 ms: the histogram's buckets are up to 12.5 % wide.
	if [ -n "$ip99" ] && [ "$(us "$ip99")" -ge 18000 ]; then
		got=1
		break
	fi
	sleep 0.1
done
cat "$TMP/wide"
[ -n "$got" ] || fail "interval P99 of path 1 never showed the 20 ms delay"
echo "path 1 delayed 20 ms: P99 of the interval $ip99, since the start $allp99"
if [ -n "$allp99_before" ] && [ "$allp99_before" != - ] &&
	[ "$(us "$allp99_before")" -lt 18000 ]; then
	[ "$allp99" != - ] && [ "$(us "$allp99")" -lt "$(us "$ip99")" ] ||
		fail "the cumulative P99 ($allp99) is not below the interval's ($ip99)"
else
	echo "cumulative P99 before the delay ${allp99_before:-?}: at or above 18 ms, not compared"
fi
# The delay lifted for the steps below.
ok fault "$SESS" 1 none

# Policy.
ok policy "$SESS" min-latency
[ "$(q policy "$BENCH_PID" "$SESS")" = min-latency ] ||
	fail "policy not min-latency"
# Round robin, so that a reconnected path gets requests for sure.
ok policy "$SESS" rr --pid "$BENCH_PID"
[ "$(q policy "$BENCH_PID" "$SESS")" = round-robin ] ||
	fail "policy not round-robin"

# Disconnect path 1: it stays closed and carries nothing, path 0 does it all.
ok path disconnect "$SESS" 1
wait_state 1 closed
# Requests path 1 had in flight may still be counted as they end (later
# on a busy machine): wait, at most 10 s, until its count stands still.
read -r a0 a1 <<<"$(q ops "$BENCH_PID" "$SESS")"
for ((i = 0; i < 20; i++)); do
	sleep 0.5
	read -r b0 b1 <<<"$(q ops "$BENCH_PID" "$SESS")"
	[ "$b1" -eq "$a1" ] && break
	a0=$b0 a1=$b1
done
read -r a0 a1 <<<"$(q ops "$BENCH_PID" "$SESS")"
sleep 1
read -r b0 b1 <<<"$(q ops "$BENCH_PID" "$SESS")"
echo "ops after disconnect: path 0 $a0 -> $b0, path 1 $a1 -> $b1"
[ "$b1" -eq "$a1" ] || fail "path 1 carried requests while disconnected"
[ "$b0" -gt "$a0" ] || fail "path 0 carried nothing"
run_bounded 20 "$IBTRS" status | grep -Eq "^ +1  closed!  " ||
	fail "table: path 1 not closed (and marked)"

# Reconnect it: connected and carrying requests again (within 10 s).
ok path reconnect "$SESS" 1
wait_state 1 connected
read -r a0 a1 <<<"$(q ops "$BENCH_PID" "$SESS")"
for ((i = 0; i < 100; i++)); do
	sleep 0.1
	read -r b0 b1 <<<"$(q ops "$BENCH_PID" "$SESS")"
	[ "$b1" -gt "$a1" ] && break
done
echo "ops after reconnect: path 0 $a0 -> $b0, path 1 $a1 -> $b1"
[ "$b1" -gt "$a1" ] || fail "path 1 carries nothing after reconnecting"

# Reset: the counters drop.
read -r a0 a1 <<<"$(q ops "$BENCH_PID" "$SESS")"
ok stats reset "$SESS"
read -r b0 b1 <<<"$(q ops "$BENCH_PID" "$SESS")"
echo "ops around the reset: path 0 $a0 -> $b0, path 1 $a1 -> $b1"
[ $((b0 + b1)) -lt $((a0 + a1)) ] || fail "counters did not drop"

# --watch: one JSON document per interval until SIGINT, then exit 0. The
# signal goes to ibtrs alone, once it printed three documents (at most
# 30 s: a round over every process takes longer on a busy machine or in a
# sanitizer build). Sent to the process group as well, it could reach
# LeakSanitizer's helper, which ibtrs forks at exit under ASan, and leave
# ibtrs waiting for it for good.
"$IBTRS" status --json --watch 0.5 >"$TMP/watch" 2>"$TMP/watch.err" \
	</dev/null &
watch_pid=$!
PIDS+=("$watch_pid")
for ((i = 0; i < 300; i++)); do
	[ "$(wc -l <"$TMP/watch")" -ge 3 ] && break
	kill -0 "$watch_pid" 2>/dev/null || break
	sleep 0.1
done
n=$(wc -l <"$TMP/watch")
kill -INT "$watch_pid" 2>/dev/null
for ((i = 0; i < 100; i++)); do
	kill -0 "$watch_pid" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$watch_pid" 2>/dev/null && fail "status --watch ignores SIGINT"
wait "$watch_pid"
rc=$?
[ "$rc" -eq 0 ] || fail "status --watch: exit $rc: $(cat "$TMP/watch.err")"
[ "$n" -ge 3 ] || fail "status --watch 0.5 printed $n documents in 30 s"
while read -r line; do
	python3 -c 'import json, sys; json.loads(sys.argv[1])' "$line" ||
		fail "watch: a document does not parse"
done <"$TMP/watch"

# The bench ends well (stopped early by SIGINT, as a user would).
kill -INT "$BENCH_PID"
for ((i = 0; i < 300; i++)); do
	kill -0 "$BENCH_PID" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$BENCH_PID" 2>/dev/null && fail "bench still running"
wait "$BENCH_PID"
rc=$?
echo "bench: exit $rc: $(cat "$TMP/bench.json")"
[ "$rc" -eq 0 ] || fail "bench exited with $rc: $(cat "$TMP/bench.err")"
python3 - "$TMP/bench.json" <<'PY' || fail "bench: errors or verify failures"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d["errors"] == 0 and d["verify_failures"] == 0 and
         d["lost"] == 0 and d["ops"] > 0 else 1)
PY
[ -e "$IBTRS_RUNTIME_DIR/$BENCH_PID.sock" ] && fail "the bench left its socket"

# Bad input.
expect 2 status --bogus
expect 2 status --format xml
expect 2 status --pid x
expect 2 status stray
expect 1 path disconnect nosuch 0
expect 2 path disconnect "$SESS" x
expect 2 path disconnect "$SESS" 16
expect 2 path disconnect "$SESS"
expect 2 path frobnicate "$SESS" 0
expect 2 policy "$SESS" fastest
expect 2 fault "$SESS" 0 melt
expect 2 fault "$SESS" 0 delay
expect 2 stats clear

# A socket that accepts but never answers: an error with --pid, a warning
# otherwise (the others are still shown); both exit 1.
python_socket listen
expect 1 status --pid "$SILENT_PID"
grep -q "no answer" "$TMP/err" || fail "silent socket: $(cat "$TMP/err")"
run_bounded 20 "$IBTRS" status >"$TMP/out" 2>"$TMP/err" </dev/null
rc=$?
[ "$rc" -eq 1 ] || fail "status with a silent socket: exit $rc"
[ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "silent socket: $(cat "$TMP/err")"
grep -q "^process $SRV_PID " "$TMP/out" || fail "silent socket hides the server"
# Control commands still find their way (and say why nothing is found).
expect 1 path disconnect nosuch 0
kill -KILL "$SILENT_PID"
wait "$SILENT_PID" 2>/dev/null

# Stale sockets (their process was killed) are removed, quietly unless
# --verbose; the dead silent one above is stale now, too.
python_socket stale
ok status
[ -e "$IBTRS_RUNTIME_DIR/$STALE_PID.sock" ] && fail "stale socket not removed"
[ -e "$IBTRS_RUNTIME_DIR/$SILENT_PID.sock" ] && fail "stale socket not removed"
python_socket stale
run_bounded 20 "$IBTRS" status --verbose >"$TMP/out" 2>"$TMP/err" </dev/null ||
	fail "status --verbose with a stale socket: exit $?"
grep -q "stale socket of process $STALE_PID" "$TMP/err" ||
	fail "no note on the stale socket: $(cat "$TMP/err")"
[ -e "$IBTRS_RUNTIME_DIR/$STALE_PID.sock" ] && fail "stale socket not removed"
python_socket stale
expect 1 status --pid "$STALE_PID"
[ -e "$IBTRS_RUNTIME_DIR/$STALE_PID.sock" ] && fail "stale socket not removed"

# A process that answers what the library would (a fake, so that the
# figures are exact): path 1 demoted as slow, its histogram 100000
# requests of 100 us from before and 50 more of 22 ms per read. The table
# marks it "demoted!" with the reason on a line, within 100 columns; the
# interval's P99 is 22 ms while the one since the start stays at 100 us.
cat >"$TMP/fake.py" <<'PY'
import json, os, socket, sys
def bucket(v):
    if v < 8:
        return v
    shift = v.bit_length() - 1 - 3
    return ((shift + 1) << 3) + (v >> shift) - 8
s = socket.socket(socket.AF_UNIX)
s.bind(os.path.join(sys.argv[1], "%d.sock" % os.getpid()))
s.listen(16)
print("ready", flush=True)
n = 0
while True:
    c, _ = s.accept()
    c.makefile().readline()
    n += 1
    fast, slow = bucket(100000), bucket(22000000)
    def path(idx, hist, demoted):
        return {"idx": idx, "state": "connected", "src": "",
                "dst": "127.0.0.1:9", "tls": "", "inflight": 1,
                "rd_ops": 100 * n, "rd_bytes": 409600 * n, "wr_ops": 0,
                "wr_bytes": 0, "errors": 0, "failovers": 0,
                "reconnect_attempts": 0, "reconnects": 0, "hb_rtt_us": 50,
                "demoted": demoted, "demote_reason": "slow" if demoted else "",
                "demotions": 1 if demoted else 0, "readmissions": 0,
                "lat_us": {"p50": 100, "p99": 100, "p999": 100, "max": 100},
                "lat_hist": {"bits": 3, "ns": sorted(hist.items())}}
    doc = {"pid": os.getpid(), "comm": "fake", "servers": [],
           "clients": [{"sessname": "fake", "uuid": "", "backend": "tcp",
                        "policy": "min-inflight", "queue_depth": 8,
                        "max_io_size": 4096, "events": [],
                        "paths": [path(0, {fast: 1000 * n}, False),
                                  path(1, {fast: 100000, slow: 50 * n},
                                       True)]}]}
    c.sendall((json.dumps(doc) + "\n").encode())
    c.close()
PY
python3 "$TMP/fake.py" "$IBTRS_RUNTIME_DIR" >"$TMP/fake.out" &
FAKE_PID=$!
PIDS+=("$FAKE_PID")
for ((i = 0; i < 100; i++)); do
	grep -q ready "$TMP/fake.out" 2>/dev/null && break
	sleep 0.1
done
ok status --pid "$FAKE_PID"
cat "$TMP/out"
grep -Eq "^ +0  connected  127\.0\.0\.1:9 .* [0-9.]+us$" "$TMP/out" ||
	fail "fake: path 0 not connected, or no interval P99"
grep -Eq "^ +1  demoted!   127\.0\.0\.1:9 .* 22\.0ms$" "$TMP/out" ||
	fail "fake: path 1 not marked demoted, or its interval P99 not 22 ms"
grep -qx "    path 1 demoted as slow: probes only until it recovers (demotions 1)" \
	"$TMP/out" || fail "fake: no reason for the demotion of path 1"
[ "$(grep -c demoted "$TMP/out")" -eq 2 ] || fail "fake: path 0 marked demoted"
awk 'length($0) > 100 { print "too wide: " $0; bad = 1 } END { exit bad }' \
	"$TMP/out" || fail "table with a demoted path wider than 100 columns"
ok status --pid "$FAKE_PID" --wide
read -r ip99 allp99 <<<"$(awk '$1 == 1 && NF == 21 { print $16, $19 }' "$TMP/out")"
echo "fake path 1: P99 of the interval $ip99, since the start $allp99"
[ "$ip99" = 22.0ms ] && [ "$allp99" = 100us ] ||
	fail "fake: interval P99 $ip99, cumulative $allp99: not 22 ms and 100 us"
kill "$FAKE_PID"
wait "$FAKE_PID" 2>/dev/null

# Everything stopped: nothing is left behind.
stop_server "$SRV_PID"
[ -e "$IBTRS_RUNTIME_DIR/$SRV_PID.sock" ] && fail "the server left its socket"
ok status
grep -qx "no ibtrs processes in $IBTRS_RUNTIME_DIR" "$TMP/out" || fail "status after the end"
left=$(find "$IBTRS_RUNTIME_DIR" -name '*.sock' | wc -l)
[ "$left" -eq 0 ] || fail "$left sockets left in the runtime dir"

echo PASS
exit 0
