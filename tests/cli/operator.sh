#!/bin/bash
# SPDX-License-Identifier: MIT
# operator.sh - what an operator trips over: a reset of every session needs
# --all; address, port, size and path errors name their cause; a refused
# control directory is said on stderr; "status" says where it looked; a
# path added where nothing listens says so; events name the source of a
# path and call an injected drop injected. Args: $1 ibtrs binary, $2
# source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

command -v python3 >/dev/null 2>&1 || skip "python3 is needed to read the output"

export IBTRS_RUNTIME_DIR
IBTRS_RUNTIME_DIR=$(mktemp -d "$TMP/rt.XXXXXX") || fail "mktemp"
unset IBTRS_CONTROL IBTRS_FAULT

# has WORDS: stderr of the last expect has WORDS.
has() {
	grep -qF -- "$1" "$TMP/err" || fail "stderr lacks '$1': $(cat "$TMP/err")"
}

# A reset cannot be undone: every session only with --all.
expect 2 stats reset
has "needs SESSION or --all"
expect 2 stats reset --all somesess
expect 2 path remove s 1 --all
expect 1 stats reset --all
has "no client sessions"

# Errors name their cause.
expect 2 bench --path ip:nosuchhost.invalid --time 1
has "cannot resolve host 'nosuchhost.invalid'"
grep -q "No route to host" "$TMP/err" && fail "a DNS failure reads as a route"
expect 2 bench --path ip:127.0.0.1:99999 --time 1
has "port 99999 out of range"
expect 2 server --listen ip:127.0.0.1:70000
has "port 70000 out of range"
expect 2 path add blk0 127.0.0.9
has "does not start with ip:"
expect 2 path add blk0 ip:nosuchhost.invalid
has "cannot resolve host"
expect 2 server -m 1g
has "the limit is 1..16777216 bytes"

# Nothing runs: "status" says where it looked.
run_bounded 20 "$IBTRS" status >"$TMP/out" 2>"$TMP/err" || fail "status: exit $?"
grep -qF "no ibtrs processes in $IBTRS_RUNTIME_DIR" "$TMP/out" ||
	fail "status does not say where it looked: $(cat "$TMP/out")"

# A user other than root sees only its own processes: "status" says so.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$IBTRS" --version >/dev/null 2>&1; then
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env -u IBTRS_RUNTIME_DIR -u XDG_RUNTIME_DIR \
		"$IBTRS" status >"$TMP/out" 2>"$TMP/err" </dev/null ||
		fail "status as uid 65534: exit $?: $(cat "$TMP/err")"
	grep -qx "no ibtrs processes in /tmp/ibtrs-65534 (those of other users are not visible)" \
		"$TMP/out" || fail "status as uid 65534: $(cat "$TMP/out")"
fi

# A control directory open to others: the process says it has no control
# socket (whatever the log level), and "status" says why it sees nothing.
bad=$TMP/open-dir
mkdir -m 0755 "$bad"
IBTRS_RUNTIME_DIR=$bad start_server open --port 0 --quiet
grep -q "no control socket: $bad must be owned by uid $(id -u) with mode 0700 (it is uid $(id -u), mode 0755)" \
	"$TMP/open.err" || fail "server is silent about $bad: $(cat "$TMP/open.err")"
IBTRS_RUNTIME_DIR=$bad run_bounded 20 "$IBTRS" status >"$TMP/out" 2>"$TMP/err"
grep -q "mode 0755" "$TMP/err" || fail "status is silent about $bad: $(cat "$TMP/err")"
stop_server "$SRV_PID"

# A server and a bench over two paths (the second with a source address);
# path 1 is dropped by injection after 1 s.
start_server srv --port 0 --quiet
SESS=cli-operator-$$
IBTRS_FAULT=1:drop@1000 "$IBTRS" bench --path ip:127.0.0.1 \
	--path ip:127.0.0.2,ip:127.0.0.1 --port "$SRV_PORT" --time 60 --qd 8 \
	--hb-timeout 300 --json --events --quiet --sessname "$SESS" \
	>"$TMP/bench.json" 2>"$TMP/bench.err" &
BENCH_PID=$!
PIDS+=("$BENCH_PID")

# events PY: the session's events (status --json) as "path msg" lines.
events() {
	run_bounded 20 "$IBTRS" status --json 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    for c in p["clients"]:
        if c["sessname"] == sys.argv[1]:
            for e in c["events"]:
                print(e["path"], e["msg"])
' "$SESS"
}
for ((i = 0; i < 150; i++)); do
	events >"$TMP/events"
	grep -q "injected fault: drop" "$TMP/events" && break
	kill -0 "$BENCH_PID" 2>/dev/null || fail "bench died: $(cat "$TMP/bench.err")"
	sleep 0.1
done
cat "$TMP/events"
grep -q "^1 127\.0\.0\.2->127\.0\.0\.1:$SRV_PORT: " "$TMP/events" ||
	fail "events of path 1 do not name its source"
grep -q "^1 .*connect failed: injected fault: drop" "$TMP/events" ||
	fail "an injected drop is not called injected"
grep -q "No route to host" "$TMP/events" && fail "an injected drop reads as a real one"

# A path that is not there is named.
expect 1 path disconnect "$SESS" 7
has "no path 7 in session $SESS"
expect 1 path remove "$SESS" 5
has "no path 5 in session $SESS"

# A path added where nothing listens: added, and said to be not connected,
# with the cause. The port is held bound (not listening) meanwhile.
python3 -c '
import socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
time.sleep(300)
' >"$TMP/free.port" &
PIDS+=("$!")
for ((i = 0; i < 100; i++)); do
	free=$(sed -n '1{/^[0-9][0-9]*$/p}' "$TMP/free.port")
	[ -n "$free" ] && break
	sleep 0.1
done
[ -n "$free" ] || fail "python did not report a port"
run_bounded 40 "$IBTRS" path add "$SESS" "ip:127.0.0.1:$free" \
	>"$TMP/out" 2>"$TMP/err" || fail "path add: exit $?: $(cat "$TMP/err")"
cat "$TMP/out"
grep -Eq "^path 2 added to $SESS, not connected: (reconnecting|closed) \(.*connect failed: Connection refused\)" \
	"$TMP/out" || fail "path add hides the failure: $(cat "$TMP/out")"

kill -INT "$BENCH_PID"
wait "$BENCH_PID"
stop_server "$SRV_PID"
echo PASS
exit 0
