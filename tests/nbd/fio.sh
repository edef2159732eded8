#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fio's nbd engine through the nbdkit plugin: 8 jobs of 4 KiB random
# reads and writes with crc32c verification on an ibnbd export over two
# loopback paths, each job on its own NBD connection and its own region;
# then 512 KiB writes (over the 128 KiB max_io_size: the plugin splits
# them). 0 errors, 0 verify failures, and the 512 KiB writes verified
# again through a new nbdkit.
. "$(dirname "$0")/lib.bash"

need_plugin
need fio python3
fio --enghelp 2>/dev/null | grep -qx '[[:space:]]*nbd' ||
	skip "fio has no nbd engine"
MiB=$((1024 * 1024))

truncate -s $((80 * MiB)) "$TMP/disk.img"
start_server srv --export "disk=$TMP/disk.img"
start_nbdkit nbdkit "$TMP/sock" path=ip:127.0.0.1 path=ip:127.0.0.2 \
	port="$SRV_PORT" export=disk
U=$(uri "$TMP/sock")

# run_fio NAME ARGS...: bounded; checks 0 errors, 0 verify failures, I/O.
run_fio() {
	local name=$1 rc
	shift
	timeout -k 5 180 fio --name="$name" --ioengine=nbd --uri="$U" \
		--output-format=json --output="$TMP/$name.json" "$@" \
		>"$TMP/$name.out" 2>&1
	rc=$?
	read -r err verify ios < <(fio_errors "$TMP/$name.json") || {
		cat "$TMP/$name.out"
		fail "fio $name: no json"
	}
	echo "fio $name: exit $rc, $ios I/Os, $err errors, $verify verify failures"
	[ "$rc" -eq 0 ] && [ "$err" -eq 0 ] && [ "$verify" -eq 0 ] || {
		cat "$TMP/$name.out"
		fail "fio $name"
	}
	[ "$ios" -gt 0 ] || fail "fio $name did no I/O"
}

# Each job verifies its own 8 MiB (offset_increment); writes then reads
# of the whole region at the end (verify_backlog checks along the way).
run_fio randrw --rw=randrw --bs=4k --iodepth=8 --numjobs=8 --size=8M \
	--offset_increment=8M --verify=crc32c --verify_state_save=0 --verify_backlog=256 \
	--verify_fatal=1 --do_verify=1 --runtime=20 --time_based=0 \
	--group_reporting=0

# Large blocks: 512 KiB writes, split by the plugin at max_io_size (fio's
# engine ignores the advertised maximum), verified.
SEQ=(--rw=write --bs=512k --offset=$((64 * MiB)) --size=$((16 * MiB))
	--iodepth=4 --verify=crc32c --verify_state_save=0 --verify_fatal=1)
run_fio seq "${SEQ[@]}" --do_verify=1
grep -q "pwrite count=524288 offset=$((64 * MiB))" "$TMP/nbdkit.log" ||
	fail "the 512 KiB writes did not reach the plugin whole"

# The data is in the export, not in the plugin: verify the 512 KiB
# writes again through a new nbdkit (a fresh session).
stop_nbdkit nbdkit "$NBDKIT_PID"
start_nbdkit nbdkit2 "$TMP/sock2" path=ip:127.0.0.1 port="$SRV_PORT" \
	export=disk
U=$(uri "$TMP/sock2")
run_fio seq "${SEQ[@]}" --verify_only=1
stop_nbdkit nbdkit2 "$NBDKIT_PID"
echo "PASS"
