#!/bin/bash
# SPDX-License-Identifier: MIT
# badinput.sh - bad command lines and runtime failures give exactly one
# "ibtrs: " line on stderr and the documented exit status (2 for usage
# errors, 1 for runtime failures). Args: $1 ibtrs binary, $2 source dir,
# $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

# expect_ok CMD...: exit 0, something on stdout, nothing on stderr.
expect_ok() {
	run_bounded 30 "$IBTRS" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null ||
		fail "ibtrs $*: exit $?"
	[ -s "$TMP/out" ] || fail "ibtrs $*: nothing on stdout"
	[ -s "$TMP/err" ] && fail "ibtrs $*: wrote on stderr"
	return 0
}

expect_ok --help
expect_ok help
expect_ok help --help
expect_ok help -h
expect_ok help bench
expect_ok bench --help
expect_ok server --help
expect_ok demo --help
expect_ok --version
grep -Eq '[0-9]+\.[0-9]+' "$TMP/out" || fail "--version prints no version"

# Usage errors.
expect 2
expect 2 --bogus
expect 2 bogus
expect 2 help bogus
expect 2 bench --bogus --path ip:127.0.0.1
expect 2 bench --path
expect 2 bench --path garbage
expect 2 bench --path ip:
expect 2 bench --path ip:127.0.0.1 --bs 0
expect 2 bench --path ip:127.0.0.1 --bs 4q
expect 2 bench --path ip:127.0.0.1 --qd -1
expect 2 bench --path ip:127.0.0.1 --qd 0
expect 2 bench --path ip:127.0.0.1 --threads 0
expect 2 bench --path ip:127.0.0.1 --time 0
expect 2 bench --path ip:127.0.0.1 --rw sideways
expect 1 bench --path ip:127.0.0.1 --port 1 --transport bogus
expect 1 server --port 0 --transport bogus
# A libfabric provider that does not fit (or does not exist): the error
# says where its reason is, when the ofi backend is built (with it
# missing, --transport ofi is "unknown or unavailable").
for sub in "server --port 0" "bench --path ip:127.0.0.1 --port 1 --time 1"; do
	# shellcheck disable=SC2086 # the words of $sub are its arguments
	IBTRS_OFI_PROVIDER=nosuch expect 1 $sub --transport ofi
	grep -q "unavailable transport 'ofi'\|IBTRS_LOG_LEVEL=err says what it lacks" \
		"$TMP/err" || fail "$sub, provider nosuch: $(cat "$TMP/err")"
done
expect 2 bench --path ip:127.0.0.1 --port 99999
expect 2 bench --path ip:127.0.0.1 stray
expect 2 bench
expect 2 bench --verify --json
expect 2 bench --path ip:127.0.0.1 --policy fastest
expect 2 bench --path ip:127.0.0.1 --hb-timeout 50
expect 2 bench --path ip:127.0.0.1 --hb-timeout x
expect 2 bench --path ip:127.0.0.1 --reconnect-delay 256
expect 2 bench --path ip:127.0.0.1 --max-reconnects -2
expect 2 bench --path ip:127.0.0.1 --max-reconnects 40000
expect 2 bench --path ip:127.0.0.1 --failover-timeout -1
expect 2 bench --path ip:127.0.0.1 --events=yes
expect 2 bench --path ip:127.0.0.1 --submit sideways
expect 2 bench --path ip:127.0.0.1 --io-cons 0
expect 2 bench --path ip:127.0.0.1 --io-cons 9
expect 2 bench --path ip:127.0.0.1 --busy-poll 1000001
expect 2 bench --path ip:127.0.0.1 --busy-poll -1
expect 2 bench --path ip:127.0.0.1 --busy-poll-adaptive
expect 2 bench --path ip:127.0.0.1 --busy-poll 0 --busy-poll-adaptive
expect 2 bench --path ip:127.0.0.1 --busy-poll-adaptive=yes
expect 2 server --bogus
expect 2 server --port 70000
expect 2 server --port x
expect 2 server --queue-depth 0
expect 2 server --max-io-size 0
expect 2 server --listen garbage
expect 2 server --hb-timeout 99
expect 2 server --grace x
expect 2 server --backing-file ''
expect 2 server --stats-file
expect 2 server --busy-poll 1000001
expect 2 server --busy-poll x
expect 2 server --busy-poll-adaptive
expect 2 server --loops 0
expect 2 server --loops 65
expect 2 server --loops x
expect 2 server --busy-poll 0 --busy-poll-adaptive
expect 2 server --null --backing-file "$TMP/disk"
expect 2 demo --time -3

# Runtime failures: a port nobody listens on, and a port already in use.
start_server first --port 0 --quiet
busy=$SRV_PORT
expect 1 server --port "$busy" --quiet
grep -q 'in use' "$TMP/err" || fail "no strerror for a port in use"
expect 1 server --port 0 --quiet --backing-file "$TMP/no/such/dir/disk"
grep -q 'No such file' "$TMP/err" || fail "no strerror for a bad backing file"
expect 1 server --port 0 --quiet --stats-file "$TMP/no/such/dir/stats"

# The port nobody listens on is one the system picked, held bound (not
# listening) by a socket while the test runs, so that no other process can
# start listening on it meanwhile: connections to it are refused.
command -v python3 >/dev/null || skip "python3 is missing"
python3 -c '
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
time.sleep(300)
' >"$TMP/free.port" &
PIDS+=("$!")
free=
for ((i = 0; i < 100; i++)); do
	free=$(sed -n '1{/^[0-9][0-9]*$/p}' "$TMP/free.port")
	[ -n "$free" ] && break
	sleep 0.1
done
[ -n "$free" ] || fail "python did not report a port"
expect 1 bench --path ip:127.0.0.1 --port "$free" --time 1 --quiet
expect 1 bench --path ip:127.0.0.1 --port "$free" --time 1 --json

echo PASS
exit 0
