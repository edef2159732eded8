# SPDX-License-Identifier: MIT
# lib.bash - helpers of the tests/nbd/*.sh tests; sourced, not run.
#
# A test gets $1 = the ibtrs binary, $2 = the source dir, $3 = the build
# dir (where nbdkit-ibtrs-plugin.so is), and exits 0 (pass), 1 (fail) or
# 77 (skip). Every process, mount and loop device it makes is registered
# here; nbd_cleanup removes them on exit, and the namespaces made by
# netns_setup (scripts/netns.bash) with them.

set -u

IBTRS=${1:?usage: $0 IBTRS_BINARY SOURCE_DIR BUILD_DIR}
SRC_DIR=${2:?}
BUILD_DIR=${3:?}
PLUGIN=$BUILD_DIR/nbdkit-ibtrs-plugin.so
unset IBTRS_LOG_LEVEL
. "$SRC_DIR/scripts/netns.bash"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ibtrs-nbd.XXXXXX") || exit 1
PIDS=()
MOUNTS=()
LOOPS=()
FUSES=()

# Undo everything, in reverse order of dependence, each step bounded.
nbd_cleanup() {
	local m pid i
	for m in "${MOUNTS[@]}"; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
	done
	for m in "${LOOPS[@]}"; do
		losetup -d "$m" 2>/dev/null
	done
	for m in "${FUSES[@]}"; do
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null
	done
	for pid in "${PIDS[@]}"; do
		netns_stop_proc "$pid"
	done
	netns_cleanup
	[ -n "${KEEP_TMP:-}" ] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap nbd_cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# need TOOL...: skip unless every tool is on PATH.
need() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || skip "needs $t"
	done
}

need_plugin() {
	need nbdkit
	[ -f "$PLUGIN" ] || skip "plugin not built ($PLUGIN): needs nbdkit-plugin-dev"
	"$IBTRS" server --help 2>&1 | grep -q -- '--export' ||
		skip "ibtrs server has no --export"
}

# wait_for SECONDS CMD...: run CMD every 0.1 s until it succeeds; 1 on
# timeout.
wait_for() {
	local t=$1 i
	shift
	for ((i = 0; i < t * 10; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# start_server NAME [ARGS...]: "[PREFIX...] ibtrs server --port 0 ARGS"
# in the background ($SRV_PREFIX, e.g. "ip netns exec NS", runs it in a
# namespace); waits at most 20 s for "listening on port N"; sets SRV_PID,
# SRV_PORT.
SRV_PREFIX=()
start_server() {
	local name=$1 i
	shift
	"${SRV_PREFIX[@]}" "$IBTRS" server --port "${SRV_FIXED_PORT:-0}" "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	SRV_PID=$!
	PIDS+=("$SRV_PID")
	SRV_PORT=
	for ((i = 0; i < 200; i++)); do
		SRV_PORT=$(sed -n 's/^listening on port \([0-9][0-9]*\)$/\1/p' \
			"$TMP/$name.out" 2>/dev/null | head -1)
		[ -n "$SRV_PORT" ] && return 0
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$TMP/$name.out" "$TMP/$name.err" >&2
	fail "server '$name' did not report its port"
}

# start_nbdkit NAME SOCKET [PLUGIN ARGS...]: nbdkit -f with the plugin on
# a unix socket ($NBDKIT_PREFIX runs it in a namespace); waits at most
# 30 s until an NBD client connects; sets NBDKIT_PID. Its stderr (-v) is
# $TMP/NAME.log.
NBDKIT_PREFIX=()
NBDKIT_OPTS=()
# A plugin built with a sanitizer needs its runtime loaded first: nbdkit
# itself is not instrumented. nbdkit's own allocations at exit are not
# the plugin's to answer for. With the ASan runtime preloaded, nbdkit
# may hang in exit() after the plugin is unloaded (in a library
# destructor, on glibc's locale lock): stop_nbdkit then accepts a kill
# once the log shows the unload and no sanitizer report.
NBDKIT_ENV=()
san=$(ldd "$PLUGIN" 2>/dev/null | grep -o '/[^ ]*lib[at]san\.so[^ ]*' | head -1)
if [ -n "$san" ]; then
	NBDKIT_ENV=(env "LD_PRELOAD=$san"
		"ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"
		"TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1}")
fi
start_nbdkit() {
	local name=$1 sock=$2
	shift 2
	"${NBDKIT_PREFIX[@]}" "${NBDKIT_ENV[@]}" nbdkit -f -v \
		--exit-with-parent -U "$sock" "${NBDKIT_OPTS[@]}" "$PLUGIN" \
		"$@" 2>"$TMP/$name.log" &
	NBDKIT_PID=$!
	PIDS+=("$NBDKIT_PID")
	for ((i = 0; i < 300; i++)); do
		if [ -S "$sock" ] && nbdinfo --size "nbd+unix:///?socket=$sock" \
			>/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$NBDKIT_PID" 2>/dev/null || break
		sleep 0.1
	done
	grep -v 'debug: ibtrs debug' "$TMP/$name.log" | tail -30 >&2
	fail "nbdkit '$name' did not serve $sock"
}

# release_disk LOOP FUSEDIR: detach the loop device (unmounted already)
# and unmount the nbdfuse mount under it. The kernel lets go of a loop
# device's backing file a moment after "losetup -d" returns, and until then
# the FUSE mount is busy: wait for it, bounded (20 s each).
release_disk() {
	local loop=$1 dir=$2 i
	losetup -d "$loop" || fail "losetup -d $loop"
	for ((i = 0; i < 200; i++)); do
		[ -e "/sys/block/${loop##*/}/loop/backing_file" ] || break
		sleep 0.1
	done
	LOOPS=()
	for ((i = 0; i < 200; i++)); do
		fusermount3 -u "$dir" 2>/dev/null && break
		sleep 0.1
	done
	((i < 200)) || fail "fusermount3 -u $dir: still busy after 20 s"
	FUSES=()
}

# stop_nbdkit NAME PID: SIGTERM; it must exit 0 within 20 s (.cleanup
# closes the device and the session without hanging or crashing), with
# no sanitizer report in its log.
stop_nbdkit() {
	local name=$1 pid=$2 i rc
	kill -TERM "$pid" 2>/dev/null || fail "nbdkit '$name' is gone"
	for ((i = 0; i < 200; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		# Past the plugin's unload only the exit() hang below is left.
		[ -n "$san" ] && grep -q 'debug: ibtrs: unload plugin' \
			"$TMP/$name.log" && sleep 0.5 && break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null && [ -n "$san" ] &&
		grep -q 'debug: ibtrs: unload plugin' "$TMP/$name.log"; then
		echo "nbdkit '$name': unloaded the plugin, hangs in exit under the sanitizer runtime: killed"
		kill -KILL "$pid"
		wait "$pid"
		rc=0
	else
		kill -0 "$pid" 2>/dev/null && {
			tail -20 "$TMP/$name.log" >&2
			fail "nbdkit '$name' does not exit after SIGTERM"
		}
		wait "$pid"
		rc=$?
	fi
	if grep -Eq 'ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer|ERROR: LeakSanitizer' \
		"$TMP/$name.log"; then
		grep -E -A30 'ERROR: AddressSanitizer|runtime error:|WARNING: ThreadSanitizer|ERROR: LeakSanitizer' \
			"$TMP/$name.log" | head -60 >&2
		fail "nbdkit '$name': sanitizer report"
	fi
	[ "$rc" -eq 0 ] || {
		tail -20 "$TMP/$name.log" >&2
		fail "nbdkit '$name' exited with $rc"
	}
}

# uri SOCKET: the NBD URI of a unix socket.
uri() {
	echo "nbd+unix:///?socket=$1"
}

# fio_errors JSON: print "ERRORS VERIFY_FAILURES IOS" from fio's
# --output-format=json output: jobs that ended with an error (a failed
# verify ends its job with EILSEQ), plus errors counted under
# --continue_on_error; and the I/Os done. Exit 1 if it cannot be read.
fio_errors() {
	python3 - "$1" <<'EOF'
import errno, json, sys
try:
    txt = open(sys.argv[1]).read()
    d = json.loads(txt[txt.index("{"):])
except Exception as e:
    print(f"unreadable fio json: {e}", file=sys.stderr)
    sys.exit(1)
err = verify = ios = 0
for j in d.get("jobs", []):
    e = j.get("error", 0)
    if e == errno.EILSEQ:
        verify += 1
    elif e:
        err += 1
    err += j.get("total_err", 0)
    for k in ("read", "write"):
        ios += j.get(k, {}).get("total_ios", 0)
print(err, verify, ios)
EOF
}
