#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A kernel file system on an ibnbd export: nbdfuse exposes the plugin's
# NBD export as a file, a loop device (direct I/O) turns it into a block
# device, ext4 is made, mounted, filled, synced, unmounted, checked clean
# by e2fsck, mounted again: every file's checksum is unchanged. The
# export's own file is checked by e2fsck too.
. "$(dirname "$0")/lib.bash"

[ "$(id -u)" -eq 0 ] || skip "needs root (loop devices, mount)"
need_plugin
need nbdfuse fusermount3 losetup mkfs.ext4 e2fsck mount umount sha256sum
[ -c /dev/fuse ] || skip "no /dev/fuse"
losetup -f >/dev/null 2>&1 || skip "no free loop device"
MiB=$((1024 * 1024))

truncate -s $((256 * MiB)) "$TMP/disk.img"
start_server srv --export "disk=$TMP/disk.img"
start_nbdkit nbdkit "$TMP/sock" path=ip:127.0.0.1 path=ip:127.0.0.2 \
	port="$SRV_PORT" export=disk

mkdir "$TMP/fuse" "$TMP/mnt"
nbdfuse "$TMP/fuse/disk" "$(uri "$TMP/sock")" >"$TMP/nbdfuse.log" 2>&1 &
PIDS+=($!)
FUSES+=("$TMP/fuse")
wait_for 30 test -s "$TMP/fuse/disk" || {
	cat "$TMP/nbdfuse.log"
	fail "nbdfuse did not expose the export"
}
[ "$(stat -c %s "$TMP/fuse/disk")" -eq $((256 * MiB)) ] ||
	fail "nbdfuse's file has the wrong size"

LOOP=$(losetup --direct-io=on -f --show "$TMP/fuse/disk" 2>"$TMP/losetup.err") ||
	LOOP=$(losetup -f --show "$TMP/fuse/disk") ||
	fail "losetup: $(cat "$TMP/losetup.err")"
LOOPS+=("$LOOP")
echo "loop device $LOOP on nbdfuse $(grep -q 'direct' "$TMP/losetup.err" && echo '(buffered)' || echo '(direct I/O)')"

timeout 120 mkfs.ext4 -q -F "$LOOP" || fail "mkfs.ext4"
mount "$LOOP" "$TMP/mnt" || fail "mount"
MOUNTS+=("$TMP/mnt")
mkdir "$TMP/mnt/d"
for i in $(seq 1 16); do
	head -c $(((i * 397) % 2048 * 1024 + 4096)) /dev/urandom \
		>"$TMP/mnt/d/f$i" || fail "write f$i"
done
head -c $((48 * MiB)) /dev/urandom >"$TMP/mnt/big" || fail "write big"
rm "$TMP/mnt/d/f3" "$TMP/mnt/d/f7"
timeout 120 sync || fail "sync"
(cd "$TMP/mnt" && find . -type f -print0 | sort -z | xargs -0 sha256sum) \
	>"$TMP/sums"
# fstrim sends discards down through the loop device, FUSE and NBD.
command -v fstrim >/dev/null && timeout 60 fstrim "$TMP/mnt" 2>/dev/null
umount "$TMP/mnt" || fail "umount"
MOUNTS=()

timeout 120 e2fsck -fn "$LOOP" >"$TMP/fsck.out" 2>&1 || {
	cat "$TMP/fsck.out"
	fail "e2fsck found errors on $LOOP"
}
echo "e2fsck -fn $LOOP: clean"
mount "$LOOP" "$TMP/mnt" || fail "remount"
MOUNTS+=("$TMP/mnt")
(cd "$TMP/mnt" && sha256sum --quiet -c "$TMP/sums") ||
	fail "checksums differ after remount"
echo "remount: $(wc -l <"$TMP/sums") files, checksums equal"
umount "$TMP/mnt" || fail "umount"
MOUNTS=()
release_disk "$LOOP" "$TMP/fuse"

# The server's file is the file system, block for block.
timeout 120 e2fsck -fn "$TMP/disk.img" >"$TMP/fsck2.out" 2>&1 || {
	cat "$TMP/fsck2.out"
	fail "e2fsck found errors in the exported file"
}
nconn=$(grep -c 'open readonly=0' "$TMP/nbdkit.log")
echo "nbdfuse used $((nconn - 1)) NBD connection(s) on one session"
stop_nbdkit nbdkit "$NBDKIT_PID"
echo "PASS"
