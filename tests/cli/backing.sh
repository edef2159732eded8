#!/bin/bash
# SPDX-License-Identifier: MIT
# backing.sh - "ibtrs server --backing-file": one 64 MiB file shared by every
# session, whose data survives a kill -9 of the server and a restart.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

disk=$TMP/disk
size=$((64 << 20))

start_server first --port 0 --quiet --backing-file "$disk"
[ "$(stat -c %s "$disk")" -eq "$size" ] || fail "backing file is not 64 MiB"
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" \
	--rw randwrite --time 1 --verify --quiet >"$TMP/write.out" 2>&1 ||
	fail "write bench failed: $(cat "$TMP/write.out")"
kill -KILL "$SRV_PID"
wait "$SRV_PID" 2>/dev/null
cmp -s -n "$size" "$disk" /dev/zero && fail "nothing written to the file"

# Restarted on the same file: a verifying read-only run expects zeros
# (it wrote nothing itself), so it must find the data written before.
start_server second --port 0 --quiet --backing-file "$disk"
[ "$(stat -c %s "$disk")" -eq "$size" ] || fail "restart changed the size"
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" \
	--rw randread --time 1 --verify --quiet >"$TMP/read.out" 2>&1
rc=$?
cat "$TMP/read.out"
[ "$rc" -eq 1 ] || fail "read after restart: exit $rc, expected 1"
grep -Eq 'verify failures: [1-9][0-9]*$' "$TMP/read.out" ||
	fail "the data did not survive the restart"
stop_server "$SRV_PID"
echo PASS
exit 0
