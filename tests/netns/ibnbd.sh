#!/usr/bin/env bash
# ibnbd over two paths in network namespaces while links fail.
#
# A client namespace and a server namespace joined by two veth pairs, one
# per path. `ibtrs server --export disk=FILE` serves a file; `ibtrs bench
# --export disk --verify` runs random 4 KiB reads and writes over both
# paths while
#   link: one path's link goes down and comes back up;
#   nopath: both links go down for two seconds (no path at all: requests
#           wait for a path instead of failing) and come back.
# Each run must end with zero failed, zero lost and zero wrong reads, and
# its final pass must read back every block it wrote with the pattern of
# its last WRITE: data a WRITE acknowledged and the file lost, or an old
# WRITE replayed over a newer one, fails it. The scenario's path must have
# reconnected.
#
# Args: $1 ibtrs binary, $2 source dir, $3 build dir. Exit 77 without root
# or network namespaces. Only addresses inside the namespaces made here are
# used; everything made is removed on exit.
set -u
tool=$1
. "$2/scripts/netns.bash"
tmp=$(mktemp -d /tmp/ibnbd-netns.XXXXXX)
srv_pid=
bench_pid=
port=
failed=0

cleanup() {
	[ -n "$bench_pid" ] && kill -9 "$bench_pid" 2>/dev/null
	[ -n "$srv_pid" ] && kill -9 "$srv_pid" 2>/dev/null
	netns_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT

netns_test ibnbd n 10 2 python3

now() { date +%s.%N; }

# start_server: export $tmp/disk.img as "disk" on a port the OS picks.
start_server() {
	truncate -s 64M "$tmp/disk.img"
	# Emptied here, not by the redirection: the child truncates it only
	# once it runs, and the wait below would read the last server's line.
	: >"$tmp/srv.out"
	ip netns exec "$S" "$tool" server --port 0 --hb-timeout 1000 \
		--export "disk=$tmp/disk.img" >"$tmp/srv.out" 2>&1 &
	srv_pid=$!
	for _ in $(seq 200); do
		port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' \
			"$tmp/srv.out" 2>/dev/null | head -n1)
		[ -n "$port" ] && return 0
		kill -0 "$srv_pid" 2>/dev/null || break
		sleep 0.05
	done
	echo "server did not start"; cat "$tmp/srv.out"
	return 1
}

stop_server() {
	netns_stop_proc "$srv_pid"
	srv_pid=
}

# run_bench NAME SECONDS: bench in the client namespace, in the background.
run_bench() {
	ip netns exec "$C" "$tool" bench --path ip:10.250.10.2 \
		--path ip:10.250.11.2 --port "$port" --export disk \
		--rw randrw --bs 4k --qd 32 --threads 2 --time "$2" --verify \
		--json --interval-json --hb-timeout 1000 --reconnect-delay 0 \
		--quiet >"$tmp/$1.json" 2>"$tmp/$1.err" &
	bench_pid=$!
}

# wait_run NAME: the bench's first interval line with requests on both
# paths (its run is on; at most 30 s: a loaded host may take seconds to
# start a bench); the faults are timed from here. Timed from the start of
# the bench instead, a link that went down before its open made its first
# connect fail (Network is unreachable), and the bench with it.
wait_run() {
	for _ in $(seq 300); do
		grep -Eq '"paths":\[[1-9][0-9]*,[1-9]' "$tmp/$1.err" 2>/dev/null &&
			return 0
		kill -0 "$bench_pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "$1: no requests on both paths yet (going on)"
}

# wait_bench NAME SECONDS: the bench's exit status once it ends by itself,
# at most SECONDS later; a bench still running then is a failure of its
# own (its last stderr lines printed), stopped with SIGTERM, then SIGKILL.
wait_bench() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$bench_pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$bench_pid" 2>/dev/null; then
		echo "FAIL $1: bench still running $2 s after its end"
		tail -n 20 "$tmp/$1.err"
		netns_stop_proc "$bench_pid"
		bench_pid=
		return 124
	fi
	wait "$bench_pid"
	local rc=$?
	bench_pid=
	return $rc
}

# check NAME RC PATHS: the verdict of one run; PATHS lists the indexes of
# the paths that failed and must have reconnected.
check() {
	python3 - "$tmp/$1.json" "$tmp/$1.err" "$1" "$2" "$3" <<'EOF'
import json, sys
out, err, name, rc, paths = sys.argv[1:]
ok = True
def fail(msg):
    global ok
    ok = False
    print(f"FAIL {name}: {msg}")
try:
    d = json.load(open(out))
except Exception as e:
    print(f"FAIL {name}: no JSON from bench ({e})")
    print(open(err).read()[-2000:])
    sys.exit(1)
if rc != "0":
    fail(f"bench exit status {rc}")
for k in ("errors", "verify_failures", "lost"):
    if d.get(k) != 0:
        fail(f"{k} = {d.get(k)}")
if d.get("write_ops", 0) <= 0 or d.get("read_ops", 0) <= 0:
    fail("no reads or no writes")
t = d.get("target", {})
if t.get("export") != "disk" or t.get("size") != 64 << 20:
    fail(f"wrong target {t}")
if t.get("final_verified", 0) <= 0:
    fail("the final pass read back nothing")
for i in (int(p) for p in paths.split(",")):
    p = d["paths"][i]
    if p["reconnects"] < 1:
        fail(f"path {i} did not reconnect: {p}")
    if p["state"] != "connected":
        fail(f"path {i} ends {p['state']}")
print(f"{name}: {d['ops']} ops ({d['read_ops']} reads, {d['write_ops']} "
      f"writes), {t.get('final_verified')} blocks read back at the end, "
      f"longest I/O gap "
      f"{d['max_gap_ms']:.0f} ms, failovers "
      f"{[p['failovers'] for p in d['paths']]}")
if not ok:
    print(open(err).read()[-2000:])
sys.exit(0 if ok else 1)
EOF
	[ $? -eq 0 ] || failed=$((failed + 1))
}

# scenario_link: path 1's link goes down for 2.5 s during a 9 s run, 2.5 s
# into it.
scenario_link() {
	start_server || return 1
	run_bench link 9
	wait_run link
	sleep 1.5
	netns_link 1 down
	sleep 2.5
	netns_link 1 up
	wait_bench link 120
	local rc=$?
	stop_server
	check link "$rc" 1
}

# scenario_nopath: both links down for 2 s: no path at all.
scenario_nopath() {
	start_server || return 1
	run_bench nopath 9
	wait_run nopath
	sleep 1.5
	netns_link 0 down
	netns_link 1 down
	sleep 2
	netns_link 0 up
	netns_link 1 up
	wait_bench nopath 120
	local rc=$?
	stop_server
	check nopath "$rc" 0,1
}

scenario_link || failed=$((failed + 1))
scenario_nopath || failed=$((failed + 1))
[ "$failed" -eq 0 ] || { echo "FAIL: $failed scenario(s)"; exit 1; }
echo "PASS"
exit 0
