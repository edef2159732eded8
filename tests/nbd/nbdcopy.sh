#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libnbd's clients through the nbdkit plugin: nbdcopy a 32 MiB image with
# a zero hole into an ibnbd export (over four NBD connections sharing the
# plugin's one session and one rw open) and back out, checksums equal;
# nbdinfo --json shows the size, the block sizes and every can_* flag the
# plugin claims; -r and readonly=true serve the export read only.
. "$(dirname "$0")/lib.bash"

need_plugin
need nbdcopy nbdinfo python3 sha256sum
MiB=$((1024 * 1024))

# Random data, 8 MiB of zeros (nbdcopy zeroes them with NBD_CMD_WRITE_ZEROES
# over what the export held before: random bytes), random again.
{
	head -c $((12 * MiB)) /dev/urandom
	head -c $((8 * MiB)) /dev/zero
	head -c $((12 * MiB)) /dev/urandom
} >"$TMP/src.img"
head -c $((32 * MiB)) /dev/urandom >"$TMP/disk.img"
start_server srv --export "disk=$TMP/disk.img"
start_nbdkit nbdkit "$TMP/sock" path=ip:127.0.0.1 path=ip:127.0.0.2 \
	port="$SRV_PORT" export=disk
U=$(uri "$TMP/sock")

sum() { sha256sum "$1" | cut -d' ' -f1; }
want=$(sum "$TMP/src.img")
timeout 120 nbdcopy --connections=4 --flush "$TMP/src.img" "$U" ||
	fail "nbdcopy file -> nbd"
[ "$(sum "$TMP/disk.img")" = "$want" ] ||
	fail "the exported file differs from the image after nbdcopy"
timeout 120 nbdcopy --connections=4 "$U" "$TMP/out.img" ||
	fail "nbdcopy nbd -> file"
[ "$(sum "$TMP/out.img")" = "$want" ] || fail "the copy back differs"
echo "nbdcopy file -> nbd -> file: sha256 equal ($want)"
nconn=$(grep -c 'open readonly=0' "$TMP/nbdkit.log")
[ "$nconn" -ge 5 ] || fail "nbdcopy opened $nconn connections, expected 4 per copy"
grep -q ': zero count=' "$TMP/nbdkit.log" ||
	fail "nbdcopy wrote the zero hole without NBD_CMD_WRITE_ZEROES"
echo "nbdcopy: $nconn NBD connections on the plugin's one session"

# check_info JSON SIZE RO: every flag the plugin claims, for a rw or ro
# connection, and the block sizes (512 logical, 4096 physical, the
# server's max_io_size, 128 KiB by default).
check_info() {
	python3 - "$@" <<'PY'
import json, sys
path, size, ro = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
d = json.load(open(path))
e = d["exports"][0]
want = {
    "export-size": size,
    "is_read_only": ro,
    "is_rotational": False,
    "can_flush": True,
    "can_fua": not ro,
    "can_multi_conn": True,
    "can_trim": not ro,
    "can_zero": not ro,
    "can_fast_zero": False,
    "can_cache": False,
    "block_size_minimum": 512,
    "block_size_preferred": 4096,
    "block_size_maximum": 128 * 1024,
}
bad = []
for k, v in want.items():
    if k not in e:
        bad.append(f"{k} missing")
    elif e[k] != v:
        bad.append(f"{k} = {e[k]}, expected {v}")
for b in bad:
    print("nbdinfo:", b)
if bad:
    print(json.dumps(e, indent=1))
    sys.exit(1)
print("nbdinfo: " + ", ".join(f"{k}={e[k]}" for k in want))
PY
}
timeout 30 nbdinfo --json "$U" >"$TMP/info.json" || fail "nbdinfo --json"
check_info "$TMP/info.json" $((32 * MiB)) 0 || fail "nbdinfo flags (rw)"
stop_nbdkit nbdkit "$NBDKIT_PID"

# nbdkit -r: read only on the NBD side, and the plugin gives the export's
# rw open back (a second rw client gets it while -r serves).
NBDKIT_OPTS=(-r)
start_nbdkit ro "$TMP/sock-ro" path=ip:127.0.0.1 port="$SRV_PORT" \
	export=disk
NBDKIT_OPTS=()
timeout 30 nbdinfo --json "$(uri "$TMP/sock-ro")" >"$TMP/info-ro.json" ||
	fail "nbdinfo --json (-r)"
check_info "$TMP/info-ro.json" $((32 * MiB)) 1 || fail "nbdinfo flags (-r)"
timeout 120 nbdcopy "$(uri "$TMP/sock-ro")" "$TMP/out-ro.img" ||
	fail "nbdcopy from -r"
[ "$(sum "$TMP/out-ro.img")" = "$want" ] || fail "the -r copy differs"
start_nbdkit rw2 "$TMP/sock-rw2" path=ip:127.0.0.1 port="$SRV_PORT" \
	export=disk
stop_nbdkit rw2 "$NBDKIT_PID"
echo "nbdkit -r: read only, shares the export with a rw client"

start_nbdkit ro2 "$TMP/sock-ro2" path=ip:127.0.0.1 port="$SRV_PORT" \
	export=disk readonly=true
timeout 30 nbdinfo --json "$(uri "$TMP/sock-ro2")" >"$TMP/info-ro2.json" ||
	fail "nbdinfo --json (readonly=true)"
check_info "$TMP/info-ro2.json" $((32 * MiB)) 1 ||
	fail "nbdinfo flags (readonly=true)"
echo "readonly=true: read only"
echo "PASS"
