#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Path failure under real NBD clients. A client namespace and a server
# namespace joined by two veth pairs, one per path (10.250.20.0/24 and
# 10.250.21.0/24); the ibnbd server exports a file in the server
# namespace, nbdkit with the plugin runs in the client namespace with both
# paths and serves a unix socket. Phase 1: fio's nbd engine, random 4 KiB
# reads and writes with crc32c verification, while path 1's link goes
# down and comes back: 0 errors, 0 verify failures, path 1 lost and
# reconnected; then both paths down for 3 s (requests wait), then longer
# than queue-timeout (a read fails with EIO, nbdkit says why, and reads
# work again after). Phase 2: the same cut under ext4 on nbdfuse and a loop
# device while files are written: they verify after a remount, and
# e2fsck finds the file system clean.
. "$(dirname "$0")/lib.bash"

[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
need_plugin
need ip fio python3
netns_setup ibnbd-n n 20 2 || {
	[ $? -eq 1 ] && skip "$NETNS_ERR"
	fail "$NETNS_ERR"
}
C=$NETNS_C
S=$NETNS_S
MiB=$((1024 * 1024))

truncate -s $((256 * MiB)) "$TMP/disk.img"
SRV_PREFIX=(ip netns exec "$S")
start_server srv --hb-timeout 1000 --export "disk=$TMP/disk.img"
NBDKIT_PREFIX=(ip netns exec "$C")
# Path events in the log, not one line per request.
NBDKIT_OPTS=(-D nbdkit.backend.datapath=0)

# nbdkit_up NAME: nbdkit in the client namespace on both paths.
nbdkit_up() {
	start_nbdkit "$1" "$TMP/$1.sock" path=ip:10.250.20.2 \
		path=ip:10.250.21.2 port="$SRV_PORT" export=disk \
		hb-timeout=1000 reconnect-delay=1 queue-timeout=30000
}

# cut_path NAME DOWN_AT UP_AT: path 1's link down at DOWN_AT seconds, up
# at UP_AT; then wait (20 s at most) for nbdkit to report path 1
# connected again.
cut_path() {
	local name=$1 i
	sleep "$2"
	netns_link 1 down
	echo "$name: path 1 link down"
	sleep $(($3 - $2))
	netns_link 1 up
	echo "$name: path 1 link up"
}

# check_path NAME: path 1 went down and came back, per nbdkit's log.
check_path() {
	local log=$TMP/$1.log i
	grep -q 'path 1: [^ ]*: connected -> ' "$log" ||
		fail "$1: path 1 never left the connected state"
	for ((i = 0; i < 200; i++)); do
		[ "$(grep -c 'path 1: [^ ]*: [a-z]* -> connected' "$log")" -ge 2 ] &&
			break
		sleep 0.1
	done
	[ "$i" -lt 200 ] || fail "$1: path 1 did not reconnect"
	grep 'path 1: ' "$log" | sed 's/.*ibtrs [a-z]*: //' | tail -4
}

# Phase 1: fio with verification through the cut.
nbdkit_up fio
timeout -k 5 120 fio --name=failover --ioengine=nbd \
	--uri="$(uri "$TMP/fio.sock")" --rw=randrw --bs=4k --iodepth=16 \
	--numjobs=4 --size=16M --offset_increment=16M --verify=crc32c --verify_state_save=0 \
	--verify_backlog=128 --verify_fatal=1 --time_based --runtime=12 \
	--output-format=json --output="$TMP/fio.json" >"$TMP/fio.out" 2>&1 &
fio_pid=$!
PIDS+=("$fio_pid")
cut_path fio 3 7
wait "$fio_pid"
rc=$?
read -r err verify ios < <(fio_errors "$TMP/fio.json") || {
	cat "$TMP/fio.out"
	fail "fio: no json"
}
echo "fio: exit $rc, $ios I/Os, $err errors, $verify verify failures"
[ "$rc" -eq 0 ] && [ "$err" -eq 0 ] && [ "$verify" -eq 0 ] && [ "$ios" -gt 0 ] || {
	head -20 "$TMP/fio.out"
	grep -E 'error:|path [0-9]+: ' "$TMP/fio.log" | head -40
	# A sanitizer's report ends nbdkit, and with it every request.
	grep -A 60 -m 1 'Sanitizer' "$TMP/fio.log"
	fail "fio through the path cut"
}
check_path fio
! grep -q 'error:' "$TMP/fio.log" || {
	grep 'error:' "$TMP/fio.log" | head
	fail "nbdkit reported a failed request"
}
stop_nbdkit fio "$NBDKIT_PID"

# Phase 1b: both paths down for 3 s: requests wait for a path (up to
# queue-timeout) and complete once one is back; fio sees nothing.
nbdkit_up all
timeout -k 5 120 fio --name=all --ioengine=nbd \
	--uri="$(uri "$TMP/all.sock")" --rw=randrw --bs=4k --iodepth=16 \
	--numjobs=2 --size=16M --offset_increment=16M --verify=crc32c --verify_state_save=0 \
	--verify_backlog=128 --verify_fatal=1 --time_based --runtime=10 \
	--output-format=json --output="$TMP/all.json" >"$TMP/all.out" 2>&1 &
fio_pid=$!
PIDS+=("$fio_pid")
sleep 3
netns_link 0 down
netns_link 1 down
echo "all: both links down"
sleep 3
netns_link 0 up
netns_link 1 up
echo "all: both links up"
wait "$fio_pid"
rc=$?
read -r err verify ios < <(fio_errors "$TMP/all.json") || fail "fio: no json"
echo "fio (no path for 3 s): exit $rc, $ios I/Os, $err errors, $verify verify failures"
[ "$rc" -eq 0 ] && [ "$err" -eq 0 ] && [ "$verify" -eq 0 ] || {
	cat "$TMP/all.out"
	fail "fio through 3 s without a path"
}
grep -q 'no path connected; requests wait' "$TMP/all.log" ||
	fail "the session never had no path"
stop_nbdkit all "$NBDKIT_PID"

# Phase 1c: no path for longer than queue-timeout: a read fails with EIO
# and nbdkit names the cause; once a path is back, reads work again.
if command -v qemu-io >/dev/null; then
	start_nbdkit qt "$TMP/qt.sock" path=ip:10.250.20.2 \
		path=ip:10.250.21.2 port="$SRV_PORT" export=disk \
		hb-timeout=500 reconnect-delay=1 queue-timeout=1000
	netns_link 0 down
	netns_link 1 down
	wait_for 20 grep -q 'no path connected; requests wait' "$TMP/qt.log" ||
		fail "qt: the session did not notice the cut"
	timeout 60 qemu-io -f raw -c 'read 0 4k' "$(uri "$TMP/qt.sock")" \
		>"$TMP/qt.out" 2>&1 && fail "qt: a read without a path succeeded"
	grep -q 'Input/output error' "$TMP/qt.out" || {
		cat "$TMP/qt.out"
		fail "qt: the read did not fail with EIO"
	}
	grep -q 'no path to the server came up within queue-timeout' \
		"$TMP/qt.log" || fail "qt: nbdkit did not name the cause"
	echo "qt: a read without a path past queue-timeout: $(grep -m1 -o 'read failed.*' "$TMP/qt.out")"
	netns_link 0 up
	netns_link 1 up
	wait_for 30 timeout 10 qemu-io -f raw -c 'read 0 4k' \
		"$(uri "$TMP/qt.sock")" || fail "qt: reads do not work again"
	echo "qt: reads work again once a path is back"
	stop_nbdkit qt "$NBDKIT_PID"
fi

# Phase 2: ext4 through the cut.
if ! command -v nbdfuse >/dev/null || ! [ -c /dev/fuse ] ||
	! losetup -f >/dev/null 2>&1 || ! command -v mkfs.ext4 >/dev/null; then
	echo "phase 2 (ext4) not run: needs nbdfuse, /dev/fuse, a loop device and mkfs.ext4"
	echo "PASS"
	exit 0
fi
nbdkit_up ext4
mkdir "$TMP/fuse" "$TMP/mnt" "$TMP/src"
nbdfuse "$TMP/fuse/disk" "$(uri "$TMP/ext4.sock")" >"$TMP/nbdfuse.log" 2>&1 &
PIDS+=($!)
FUSES+=("$TMP/fuse")
wait_for 30 test -s "$TMP/fuse/disk" || fail "nbdfuse did not expose the export"
LOOP=$(losetup --direct-io=on -f --show "$TMP/fuse/disk" 2>/dev/null) ||
	LOOP=$(losetup -f --show "$TMP/fuse/disk") || fail "losetup"
LOOPS+=("$LOOP")
timeout 120 mkfs.ext4 -q -F "$LOOP" || fail "mkfs.ext4"
mount "$LOOP" "$TMP/mnt" || fail "mount"
MOUNTS+=("$TMP/mnt")
for i in $(seq 1 40); do
	head -c $(((i * 131) % 1024 * 1024 + 512)) /dev/urandom >"$TMP/src/f$i"
done
# Writer: a file every 0.25 s, synced, for ~10 s (the cut is inside).
(
	for i in $(seq 1 40); do
		cp "$TMP/src/f$i" "$TMP/mnt/f$i" && sync "$TMP/mnt/f$i" || exit 1
		sleep 0.25
	done
) &
writer=$!
PIDS+=("$writer")
cut_path ext4 3 7
wait "$writer" || fail "writing files through the cut failed"
timeout 120 sync || fail "sync"
umount "$TMP/mnt" || fail "umount"
MOUNTS=()
timeout 120 e2fsck -fn "$LOOP" >"$TMP/fsck.out" 2>&1 || {
	cat "$TMP/fsck.out"
	fail "e2fsck found errors after the cut"
}
echo "ext4: e2fsck -fn clean"
mount "$LOOP" "$TMP/mnt" || fail "remount"
MOUNTS+=("$TMP/mnt")
for i in $(seq 1 40); do
	cmp -s "$TMP/src/f$i" "$TMP/mnt/f$i" || fail "f$i differs after remount"
done
echo "ext4: 40 files written across the cut verify after remount"
check_path ext4
umount "$TMP/mnt" || fail "umount"
MOUNTS=()
release_disk "$LOOP" "$TMP/fuse"
! grep -q 'error:' "$TMP/ext4.log" || {
	grep 'error:' "$TMP/ext4.log" | head
	fail "nbdkit reported a failed request"
}
stop_nbdkit ext4 "$NBDKIT_PID"
echo "PASS"
