# SPDX-License-Identifier: MIT
# common.bash - helpers shared by the tests/cli/*.sh tests; sourced, not run.
#
# A test gets $1 = the ibtrs binary, $2 = the source dir, $3 = the build
# dir, and exits 0 (pass), 1 (fail) or 77 (skip).

set -u

IBTRS=${1:?usage: $0 IBTRS_BINARY SOURCE_DIR BUILD_DIR}
# The library logs on stderr when this is set; the tests count stderr lines.
unset IBTRS_LOG_LEVEL

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ibtrs-cli.XXXXXX") || exit 1
PIDS=()

# Stop every process the test started (TERM, then KILL after 5 s), bounded.
cli_cleanup() {
	local pid i
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
	done
	rm -rf "$TMP"
}
trap cli_cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# start_server NAME [ARGS...]: start "ibtrs server ARGS" in the background,
# wait (at most 10 s) for "listening on port N"; sets SRV_PID and SRV_PORT.
start_server() {
	local name=$1 i
	shift
	"$IBTRS" server "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	SRV_PID=$!
	PIDS+=("$SRV_PID")
	SRV_PORT=
	for ((i = 0; i < 100; i++)); do
		SRV_PORT=$(sed -n 's/^listening on port \([0-9][0-9]*\)$/\1/p' \
			"$TMP/$name.out" 2>/dev/null)
		[ -n "$SRV_PORT" ] && return 0
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$TMP/$name.err" >&2
	fail "server '$name' did not report its port"
}

# stop_server PID: SIGTERM, wait at most 10 s, check exit status 0.
stop_server() {
	local pid=$1 i rc
	kill -TERM "$pid" 2>/dev/null || fail "server $pid is gone"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && fail "server $pid ignores SIGTERM"
	wait "$pid"
	rc=$?
	[ "$rc" -eq 0 ] || fail "server $pid exited with $rc after SIGTERM"
}

# run_bounded SECONDS CMD...: run with a time limit, KILL 5 s after TERM.
run_bounded() {
	local t=$1
	shift
	timeout -k 5 "$t" "$@"
}

# expect STATUS CMD...: run "ibtrs CMD..." (bounded), check the exit status
# and that stderr is exactly one line starting with "ibtrs: ".
expect() {
	local want=$1 rc lines
	shift
	run_bounded 30 "$IBTRS" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	lines=$(wc -l <"$TMP/err")
	echo "ibtrs $*: exit $rc: $(cat "$TMP/err")"
	[ "$rc" -eq "$want" ] || fail "ibtrs $*: exit $rc, expected $want"
	[ "$lines" -eq 1 ] || fail "ibtrs $*: $lines lines on stderr"
	grep -q '^ibtrs: ' "$TMP/err" || fail "ibtrs $*: no 'ibtrs: ' prefix"
}
