#!/bin/bash
# SPDX-License-Identifier: MIT
# tls.sh - TLS through the tool, with a key file made by psktool: a
# "require" server and a verifying TLS bench; "ibtrs status" shows what
# protects the path (JSON field "tls", the session line, --wide per
# path); a plaintext bench is refused with "requires TLS" on its stderr
# and in the server's log; the TLS bench ends without errors.
# Skips without psktool (gnutls-bin) or in a build without GnuTLS.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

command -v psktool >/dev/null 2>&1 || skip "psktool (gnutls-bin) is needed"
command -v python3 >/dev/null 2>&1 || skip "python3 is needed to read the output"

export IBTRS_RUNTIME_DIR
IBTRS_RUNTIME_DIR=$(mktemp -d "$TMP/rt.XXXXXX") || fail "mktemp"
unset IBTRS_CONTROL IBTRS_TLS IBTRS_TLS_PSK IBTRS_IDENTITY IBTRS_BACKEND
SESS=cli-tls-$$
KEYS=$TMP/keys.psk
psktool -u alice -p "$KEYS" >/dev/null || fail "psktool"
chmod 600 "$KEYS"

# The server's errors go to its stderr: the refusal is checked there.
IBTRS_TLS=require IBTRS_TLS_PSK=$KEYS IBTRS_LOG_LEVEL=err \
	"$IBTRS" server --port 0 -l ip:127.0.0.1 >"$TMP/probe.out" \
	2>"$TMP/probe.err" </dev/null &
probe=$!
PIDS+=("$probe")
for ((i = 0; i < 100; i++)); do
	grep -q "^listening on port" "$TMP/probe.out" && break
	kill -0 "$probe" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q "^listening on port" "$TMP/probe.out"; then
	grep -qi "without GnuTLS\|GnuTLS" "$TMP/probe.err" &&
		skip "library built without GnuTLS: $(cat "$TMP/probe.err")"
	fail "TLS server did not start: $(cat "$TMP/probe.err")"
fi
stop_server "$probe"

IBTRS_TLS=require IBTRS_TLS_PSK=$KEYS IBTRS_LOG_LEVEL=err \
	start_server srv --port 0 -l ip:127.0.0.1
IBTRS_TLS=require IBTRS_TLS_PSK=$KEYS "$IBTRS" bench --path ip:127.0.0.1 \
	--port "$SRV_PORT" --verify --time 60 --json --quiet \
	--sessname "$SESS" >"$TMP/bench.json" 2>"$TMP/bench.err" &
BENCH_PID=$!
PIDS+=("$BENCH_PID")

tls_of() {
	run_bounded 20 "$IBTRS" status --json </dev/null 2>/dev/null |
		python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p["pid"] == int(sys.argv[1]):
        for c in p["clients"]:
            if c["sessname"] == sys.argv[2] and c["paths"] and \
               c["paths"][0]["state"] == "connected":
                print(c["paths"][0]["tls"])
' "$BENCH_PID" "$SESS"
}

tls=
for ((i = 0; i < 100; i++)); do
	tls=$(tls_of)
	[ -n "$tls" ] && break
	kill -0 "$BENCH_PID" 2>/dev/null || fail "bench died: $(cat "$TMP/bench.err")"
	sleep 0.1
done
echo "path 0: tls \"$tls\""
[[ "$tls" =~ ^tls1\.3\ aes-128-gcm\ (user-space|kernel)$ ]] ||
	fail "status: tls is \"$tls\""

run_bounded 20 "$IBTRS" status --pid "$BENCH_PID" >"$TMP/table" 2>&1 </dev/null ||
	fail "status: $(cat "$TMP/table")"
grep -q "session $SESS .*backend tcp  tls1.3$" "$TMP/table" ||
	fail "table: no TLS on the session line: $(cat "$TMP/table")"
awk 'length($0) > 100 { print "too wide: " $0; bad = 1 } END { exit bad }' \
	"$TMP/table" || fail "table wider than 100 columns"
run_bounded 20 "$IBTRS" status --wide --pid "$BENCH_PID" >"$TMP/wide" 2>&1 </dev/null ||
	fail "status --wide: $(cat "$TMP/wide")"
grep -Eq "^    path 0: tls1\.3 aes-128-gcm (user-space|kernel)$" "$TMP/wide" ||
	fail "--wide: no per-path TLS line: $(cat "$TMP/wide")"

# Plaintext to the require server: refused, said on both sides.
run_bounded 30 "$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" \
	--time 1 >"$TMP/plain.out" 2>"$TMP/plain.err" </dev/null &&
	fail "a plaintext bench ran against a require server"
grep -q "requires TLS\|Protocol not supported" "$TMP/plain.err" ||
	fail "plaintext bench: no cause: $(cat "$TMP/plain.err")"
for ((i = 0; i < 100; i++)); do
	grep -q "this server requires TLS" "$TMP/srv.err" && break
	sleep 0.1
done
grep -q "plaintext client .* refused: this server requires TLS" "$TMP/srv.err" ||
	fail "server: no refusal logged: $(cat "$TMP/srv.err")"

# The TLS bench is still going, then ends cleanly with verified data.
kill -0 "$BENCH_PID" 2>/dev/null || fail "bench died: $(cat "$TMP/bench.err")"
kill -INT "$BENCH_PID"
for ((i = 0; i < 200; i++)); do
	kill -0 "$BENCH_PID" 2>/dev/null || break
	sleep 0.1
done
wait "$BENCH_PID"
rc=$?
[ "$rc" -eq 0 ] || fail "TLS bench exit $rc: $(cat "$TMP/bench.err")"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
def find(o, k):
    if isinstance(o, dict):
        for kk, v in o.items():
            if kk == k:
                yield v
            yield from find(v, k)
    elif isinstance(o, list):
        for v in o:
            yield from find(v, k)
ops = sum(v for v in find(d, "ops") if isinstance(v, (int, float)))
errs = sum(v for v in find(d, "errors") if isinstance(v, (int, float)))
bad = sum(v for v in find(d, "verify_failures") if isinstance(v, (int, float)))
assert ops > 0 and errs == 0 and bad == 0, (ops, errs, bad)
print("bench: %d ops, no errors" % ops)
' "$TMP/bench.json" || fail "bench result: $(head -c 600 "$TMP/bench.json")"
stop_server "$SRV_PID"
echo PASS
exit 0
