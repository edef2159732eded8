#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The block layer end to end, live: an ibnbd server exports a file in one
# network namespace; nbdkit with the ibtrs plugin serves it on a unix
# socket from another, over two paths (two veth pairs); fio's nbd engine
# runs random 4 KiB reads and writes with crc32c verification through it
# while path 1's link is cut for the middle third of the run and restored.
# Every second: each path's state and IOPS; the session's events as they
# happen; at the end a verdict line.
#
# Usage (root, Debian 12): scripts/demo-nbd.sh [--time SEC]
# Installs what it needs (scripts/deps.sh), builds into ./build (or uses
# the build in $IBTRS_BUILD_DIR as it is).
set -euo pipefail
cd "$(dirname "$0")/.."

time_s=21
while [ $# -gt 0 ]; do
	case $1 in
	--time)
		time_s=${2:?--time needs seconds}
		shift 2
		;;
	-h | --help)
		sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "demo-nbd: unknown argument '$1' (try --help)" >&2
		exit 2
		;;
	esac
done
case $time_s in
'' | *[!0-9]*)
	echo "demo-nbd: --time takes whole seconds" >&2
	exit 2
	;;
esac
[ "$time_s" -ge 9 ] || {
	echo "demo-nbd: --time must be at least 9 s" >&2
	exit 2
}
[ "$(id -u)" -eq 0 ] || {
	echo "demo-nbd: run as root (network namespaces)" >&2
	exit 1
}

. scripts/deps.sh
. scripts/netns.bash
ibtrs_need_pkgs "${IBTRS_BUILD_PKGS[@]}" nbdkit nbdkit-plugin-dev \
	libnbd-bin fio iproute2 python3
build=${IBTRS_BUILD_DIR:-build}
if [ -z "${IBTRS_BUILD_DIR:-}" ]; then
	echo "building into ./build"
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build -j"$(nproc)" >/dev/null
fi
IBTRS=$(realpath "$build")/ibtrs
PLUGIN=$(realpath "$build")/nbdkit-ibtrs-plugin.so
[ -f "$PLUGIN" ] || {
	echo "demo-nbd: the plugin was not built (is nbdkit-plugin-dev installed?)" >&2
	exit 1
}

tmp=$(mktemp -d /tmp/ibnbd-demo.XXXXXX)
pids=()
cleanup() {
	local p
	set +e
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	sleep 0.5
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	netns_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

netns_setup ibnbd-demo d 30 2 || {
	echo "demo-nbd: $NETNS_ERR" >&2
	exit 1
}
C=$NETNS_C
S=$NETNS_S
echo "namespaces: client $C (10.250.30.1, 10.250.31.1), server $S (10.250.30.2, 10.250.31.2)"

truncate -s 256M "$tmp/disk.img"
ip netns exec "$S" "$IBTRS" server --port 0 --hb-timeout 1000 \
	--export "disk=$tmp/disk.img" >"$tmp/srv.out" 2>&1 &
pids+=($!)
port=
for _ in $(seq 100); do
	port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$tmp/srv.out")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || {
	cat "$tmp/srv.out"
	echo "demo-nbd: the server did not start" >&2
	exit 1
}
echo "server: exports disk = $tmp/disk.img (256 MiB) on port $port"

sock=$tmp/nbd.sock
ip netns exec "$C" nbdkit -f -v -D nbdkit.backend.datapath=0 \
	--exit-with-parent -U "$sock" "$PLUGIN" path=ip:10.250.30.2 \
	path=ip:10.250.31.2 port="$port" export=disk sessname=demo-nbd \
	hb-timeout=1000 reconnect-delay=1 2>"$tmp/nbdkit.log" &
nbdkit_pid=$!
pids+=("$nbdkit_pid")
for _ in $(seq 100); do
	nbdinfo --size "nbd+unix:///?socket=$sock" >/dev/null 2>&1 && break
	sleep 0.1
done
nbdinfo --size "nbd+unix:///?socket=$sock" >/dev/null 2>&1 || {
	grep -v 'debug: ibtrs debug' "$tmp/nbdkit.log" | tail
	echo "demo-nbd: nbdkit did not start" >&2
	exit 1
}
echo "nbdkit: plugin on $sock, session demo-nbd over 2 paths"

cut_at=$((time_s / 3))
up_at=$((2 * time_s / 3))
echo "fio: nbd engine, 4 jobs, random 4 KiB reads and writes, crc32c verify, ${time_s}s;"
echo "     path 1 is cut at ${cut_at}s and restored at ${up_at}s"
echo
t0=$(date +%s.%N)
fio --name=demo --ioengine=nbd --uri="nbd+unix:///?socket=$sock" \
	--rw=randrw --bs=4k --iodepth=16 --numjobs=4 --size=32M \
	--offset_increment=32M --verify=crc32c --verify_state_save=0 --verify_backlog=256 \
	--verify_fatal=1 --time_based --runtime="$time_s" \
	--output-format=json --output="$tmp/fio.json" >"$tmp/fio.out" 2>&1 &
fio_pid=$!
pids+=("$fio_pid")

# Once a second: each path's state and IOPS, and the new events, from the
# plugin's session on its control socket (ibtrs status).
python3 - "$IBTRS" "$nbdkit_pid" "$t0" "$time_s" <<'EOF' &
import json, subprocess, sys, time
tool, pid, t0, dur = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
seen, last, prev_t = set(), {}, None
while time.time() - t0 < dur + 1:
    time.sleep(1 - ((time.time() - t0) % 1))
    try:
        out = subprocess.run([tool, "status", "--json", "--pid", pid],
                             capture_output=True, text=True, timeout=5).stdout
        sess = json.loads(out)[0]["clients"][0]
    except Exception:
        continue
    now = time.time()
    for e in sess["events"]:
        key = (e["ts"], e["path"], e["msg"])
        if key in seen or e["ts"] < t0:
            seen.add(key)
            continue
        seen.add(key)
        who = "session" if e["path"] < 0 else f"path {e['path']}"
        print(f"  {e['ts'] - t0:5.1f}s  event: {who}: {e['msg']}", flush=True)
    cols = []
    for p in sess["paths"]:
        ops = p["rd_ops"] + p["wr_ops"]
        rate = 0
        if prev_t is not None and p["idx"] in last:
            rate = (ops - last[p["idx"]]) / (now - prev_t)
        last[p["idx"]] = ops
        cols.append(f"path {p['idx']} {p['state']:<12} {rate / 1000:6.1f}k IOPS"
                    f"  failovers {p['failovers']}")
    prev_t = now
    print(f"  {now - t0:5.1f}s  " + "  |  ".join(cols), flush=True)
EOF
pids+=($!)

sleep "$(python3 -c "import time; print(max(0, $t0 + $cut_at - time.time()))")"
netns_link 1 down
t_cut=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
printf '  %5.1fs  >>> path 1 cut: link dc1 down\n' "$t_cut"
sleep "$(python3 -c "import time; print(max(0, $t0 + $up_at - time.time()))")"
netns_link 1 up
t_up=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
printf '  %5.1fs  >>> path 1 restored: link dc1 up\n' "$t_up"

rc=0
wait "$fio_pid" || rc=$?
sleep 1.2
python3 - "$tmp/fio.json" "$rc" "$t_cut" "$t_up" "$IBTRS" "$nbdkit_pid" <<'EOF'
import errno, json, subprocess, sys
path, rc, t_cut, t_up, tool, pid = sys.argv[1:]
try:
    txt = open(path).read()
    d = json.loads(txt[txt.index("{"):])
except Exception as e:
    print(f"demo-nbd: no fio result ({e})")
    sys.exit(1)
err = verify = ios = 0
for j in d["jobs"]:
    if j["error"] == errno.EILSEQ:
        verify += 1
    elif j["error"]:
        err += 1
    err += j.get("total_err", 0)
    ios += j["read"]["total_ios"] + j["write"]["total_ios"]
recon = "?"
try:
    out = subprocess.run([tool, "status", "--json", "--pid", pid],
                         capture_output=True, text=True, timeout=5).stdout
    p1 = json.loads(out)[0]["clients"][0]["paths"][1]
    recon = f"path 1 {p1['state']}, {p1['reconnects']} reconnect(s)"
    ok_path = p1["state"] == "connected" and p1["reconnects"] >= 1
except Exception:
    ok_path = False
print()
print(f"{ios} I/Os verified through NBD -> nbdkit -> ibnbd -> ibtrs; {recon}")
print(f"fio: {err} errors, {verify} verify failures, "
      f"path cut at {t_cut}s and restored at {t_up}s")
sys.exit(0 if rc == "0" and err == 0 and verify == 0 and ios > 0 and ok_path else 1)
EOF
