#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# qemu's NBD client through the nbdkit plugin: `qemu-img convert` a random
# 32 MiB image into an ibnbd export over two loopback paths and `qemu-img
# compare` it back; `qemu-io` write, read with a pattern check, discard,
# write zeroes, flush and a FUA write; every result is checked in the
# exported file itself, on the server's side.
. "$(dirname "$0")/lib.bash"

need_plugin
need qemu-img qemu-io nbdinfo python3 cmp
MiB=$((1024 * 1024))

head -c $((32 * MiB)) /dev/urandom >"$TMP/src.img"
truncate -s $((32 * MiB)) "$TMP/disk.img"
start_server srv --export "disk=$TMP/disk.img"
start_nbdkit nbdkit "$TMP/sock" path=ip:127.0.0.1 path=ip:127.0.0.2 \
	port="$SRV_PORT" export=disk
U=$(uri "$TMP/sock")

timeout 120 qemu-img convert -n -f raw -O raw "$TMP/src.img" "$U" ||
	fail "qemu-img convert into the export"
timeout 120 qemu-img compare -s -f raw -F raw "$TMP/src.img" "$U" ||
	fail "qemu-img compare: the export differs from the image"
cmp "$TMP/src.img" "$TMP/disk.img" ||
	fail "the exported file differs from the image"
echo "qemu-img convert + compare: identical (32 MiB)"

# qemu-io: each command's own check plus the file's contents after.
qio() {
	timeout 60 qemu-io -f raw "$@" "$U" >"$TMP/qio.out" 2>&1
	local rc=$?
	cat "$TMP/qio.out"
	[ "$rc" -eq 0 ] || fail "qemu-io $*: exit $rc"
	! grep -Eqi 'failed|error|verification' "$TMP/qio.out" ||
		fail "qemu-io $*: a command failed"
}
qio -c 'write -P 0xab 1M 64k' -c 'read -P 0xab 1M 64k' \
	-c 'write -P 0x5c 2M 128k' -c 'discard 2M 64k' \
	-c 'write -P 0x77 3M 256k' -c 'write -z 3M 192k' \
	-c 'write -P 0x33 8M 1M' -c 'write -z -u 8M 512k' \
	-c 'flush' -c 'write -f -P 0xcd 4M 4k' -c 'read -P 0xcd 4M 4k' \
	-c 'read -P 0 3M 192k' -c 'read -P 0x77 3264k 64k'
# A writethrough cache: every write is FUA or followed by a flush.
qio -t writethrough -c 'write -P 0xee 5M 64k' -c 'read -P 0xee 5M 64k'

# check OFFSET LEN BYTE: the exported file holds BYTE there.
check() {
	python3 - "$TMP/disk.img" "$1" "$2" "$3" <<'PY' ||
import sys
f, off, n, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4], 0)
with open(f, "rb") as fh:
    fh.seek(off)
    d = fh.read(n)
bad = [i for i, c in enumerate(d) if c != b]
if len(d) != n or bad:
    print(f"at {off}+{bad[0] if bad else len(d)}: {len(d)} bytes read, not all {b:#x}")
    sys.exit(1)
PY
		fail "file at $1 ($2 bytes) is not all $3"
}
check $((1 * MiB)) 65536 0xab
check $((2 * MiB)) 65536 0           # discarded: punched out
check $((2 * MiB + 65536)) 65536 0x5c
check $((3 * MiB)) 196608 0          # zeroed
check $((3 * MiB + 196608)) 65536 0x77
check $((4 * MiB)) 4096 0xcd         # FUA write
check $((5 * MiB)) 65536 0xee        # writethrough
check $((8 * MiB)) 524288 0          # zeroed, may unmap
check $((8 * MiB + 524288)) 524288 0x33
# The rest of the image is untouched.
cmp -n $((1 * MiB)) "$TMP/src.img" "$TMP/disk.img" ||
	fail "the first MiB changed"
cmp -i $((6 * MiB)):$((6 * MiB)) -n $((2 * MiB)) "$TMP/src.img" \
	"$TMP/disk.img" || fail "6..8 MiB changed"
cmp -i $((9 * MiB)):$((9 * MiB)) "$TMP/src.img" "$TMP/disk.img" ||
	fail "9 MiB.. changed"
echo "qemu-io: write, read -P, discard, write -z, flush, FUA: as expected"

# The plugin saw FUA writes and flushes, not only plain writes.
grep -q 'pwrite.*fua=1' "$TMP/nbdkit.log" ||
	fail "no FUA write reached the plugin"
grep -Eq ': flush$' "$TMP/nbdkit.log" || fail "no flush reached the plugin"
grep -q 'trim count=' "$TMP/nbdkit.log" || fail "no trim reached the plugin"
grep -q ': zero count=' "$TMP/nbdkit.log" || fail "no zero reached the plugin"

stop_nbdkit nbdkit "$NBDKIT_PID"
echo "PASS"
