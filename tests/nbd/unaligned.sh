#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Requests libnbd's strict mode would refuse and nbdkit passes on: reads,
# writes and zeroes that start or end inside a 512-byte block (the plugin
# reads, modifies and writes the partial block), trims with partial
# blocks (ignored), zeroes and trims far over the device's limits (split),
# and the NBD_CMD_FLAG_NO_HOLE mapping (zero without it deallocates, with
# it keeps the blocks). Every result is checked in the exported file.
. "$(dirname "$0")/lib.bash"

need_plugin
PY=/usr/bin/python3
[ -x "$PY" ] && "$PY" -c 'import nbd' 2>/dev/null ||
	skip "needs libnbd's Python module (python3-libnbd)"

truncate -s 64M "$TMP/disk.img"
start_server srv --export "disk=$TMP/disk.img"
start_nbdkit nbdkit "$TMP/sock" path=ip:127.0.0.1 path=ip:127.0.0.2 \
	port="$SRV_PORT" export=disk

timeout 120 "$PY" - "$(uri "$TMP/sock")" "$TMP/disk.img" <<'PY' ||
import os, random, sys
import nbd

uri, path = sys.argv[1], sys.argv[2]
h = nbd.NBD()
h.set_strict_mode(h.get_strict_mode() & ~nbd.STRICT_ALIGN)
h.connect_uri(uri)
size = h.get_size()
MiB = 1 << 20
rnd = random.Random(7)
model = bytearray(os.urandom(4 * MiB))
ok = True

def fail(msg):
    global ok
    ok = False
    print("FAIL:", msg)

def file_bytes(off, n):
    with open(path, "rb") as f:
        f.seek(off)
        return f.read(n)

def check(what, off=0, n=4 * MiB):
    got = file_bytes(off, n)
    if got != bytes(model[off:off + n]):
        i = next(i for i in range(n) if got[i] != model[off + i])
        fail(f"{what}: file differs at {off + i}")
    elif h.pread(n, off) != bytes(model[off:off + n]):
        fail(f"{what}: NBD read differs")
    else:
        print(f"{what}: ok")

h.pwrite(bytes(model), 0)
h.flush()
check("aligned 4 MiB write")

# Writes of every head/tail shape: inside one block, across one boundary,
# across many blocks.
for off, n in ((777, 1000), (100, 10), (511, 2), (4095, 8194), (1, 511),
               (1024, 1), (3 * MiB + 5, 300000)):
    data = os.urandom(n)
    h.pwrite(data, off)
    model[off:off + n] = data
check("unaligned writes")
for off, n in ((3, 5), (510, 4), (12345, 54321), (0, 1), (4 * MiB - 7, 7)):
    if h.pread(n, off) != bytes(model[off:off + n]):
        fail(f"unaligned read {off}+{n} differs")
print("unaligned reads: ok")

# Zeroes with partial blocks at either end.
for off, n in ((1000, 5003), (8200, 10), (MiB + 511, 2 * 4096 + 2)):
    h.zero(n, off)
    model[off:off + n] = bytes(n)
check("unaligned zeroes")

# A trim keeps the partial blocks at either end and discards the rest
# (the server punches a hole: the whole blocks read back as zeros).
h.trim(3000, 2 * MiB + 100)
model[2 * MiB + 512:2 * MiB + 3072] = bytes(2560)
check("unaligned trim")

# NO_HOLE: zeroed but still allocated; without it: deallocated.
def blocks():
    return os.stat(path).st_blocks
big = 16 * MiB
h.pwrite(os.urandom(big), 32 * MiB)
h.flush()
b0 = blocks()
h.zero(big, 32 * MiB, nbd.CMD_FLAG_NO_HOLE)
h.flush()
b1 = blocks()
if file_bytes(32 * MiB, big) != bytes(big):
    fail("zero with NO_HOLE did not zero")
if b1 < b0 - 8:
    fail(f"zero with NO_HOLE deallocated ({b0} -> {b1} blocks)")
h.zero(big, 32 * MiB)
h.flush()
b2 = blocks()
if b2 > b1 - big // 512 // 2:
    fail(f"zero without NO_HOLE kept the blocks ({b1} -> {b2} blocks)")
print(f"NO_HOLE: {b0} -> {b1} blocks kept; without: -> {b2} blocks")

# One request over the whole device: nbdkit hands it over whole, the
# plugin splits it at max_write_zeroes / max_discard.
h.pwrite(os.urandom(MiB), 60 * MiB)
h.zero(size, 0, nbd.CMD_FLAG_NO_HOLE)
if file_bytes(0, size) != bytes(size):
    fail("a zero of the whole device left data")
h.pwrite(os.urandom(MiB), 61 * MiB)
h.trim(size, 0)
if file_bytes(61 * MiB, MiB) != bytes(MiB):
    fail("a trim of the whole device left data")
print("whole-device zero and trim: ok")
h.shutdown()
sys.exit(0 if ok else 1)
PY
	fail "unaligned and large requests"
grep -q 'zero count=67108864 offset=0' "$TMP/nbdkit.log" ||
	fail "the whole-device zero did not reach the plugin whole"
stop_nbdkit nbdkit "$NBDKIT_PID"
echo "PASS"
