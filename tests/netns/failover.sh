#!/usr/bin/env bash
# Multipath failure tests in network namespaces.
#
# A client namespace and a server namespace joined by two veth pairs, one
# per path. `ibtrs bench --verify` runs at QD 32 over both paths while a
# path fails: its link goes down and up again, its packets are dropped by
# nftables while the link stays up, the server is killed with SIGKILL and
# restarted. Every scenario must end with zero failed, zero lost and zero
# run-twice requests, all data verified, and the failed path carrying load
# again; the restart is a session loss whose in-flight requests end as
# unknown outcomes, never replayed. It prints the detection time and the
# longest I/O gap.
#
# Args: $1 ibtrs binary, $2 source dir, $3 build dir. Exit 77 without root
# or network namespaces. Only addresses inside the namespaces made here are
# used; everything made is removed on exit.
set -u
tool=$1
. "$2/scripts/netns.bash"
# A fixed port: the server namespace is made here, nothing else listens in
# it, and a restarted server must come back on the same port.
port=7000
tmp=$(mktemp -d /tmp/ibtrs-netns.XXXXXX)
srv_pid=
failed=0

cleanup() {
	[ -n "$srv_pid" ] && kill -9 "$srv_pid" 2>/dev/null
	netns_cleanup
	rm -rf "$tmp"
}
trap cleanup EXIT

netns_test ibtrs i 0 2 python3

now() { date +%s.%N; }

# start_server NAME: the target is $tmp/NAME.disk, kept across restarts
# within one scenario so that a killed server's data survives.
start_server() {
	# Emptied here, not by the redirection: the child truncates it only
	# once it runs, and the wait below would read the last server's line.
	: >"$tmp/srv.out"
	ip netns exec "$S" "$tool" server --port "$port" --quiet \
		--hb-timeout 1000 --backing-file "$tmp/$1.disk" \
		--stats-file "$tmp/srv-stats.json" >"$tmp/srv.out" 2>&1 &
	srv_pid=$!
	for _ in $(seq 400); do
		grep -q "listening" "$tmp/srv.out" 2>/dev/null && return 0
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

# run_bench NAME SECONDS: bench in the client namespace, in the background
# (end_bench stops it earlier).
run_bench() {
	ip netns exec "$C" "$tool" bench --path ip:10.250.0.2 \
		--path ip:10.250.1.2 --port "$port" --qd 32 --threads 2 \
		--time "$2" --verify --json --events --interval-json \
		--hb-timeout 1000 --reconnect-delay 0 --quiet \
		>"$tmp/$1.json" 2>"$tmp/$1.err" &
	bench_pid=$!
}

# wait_load NAME: the bench's interval lines show requests on both paths,
# then 2 s more of them; at most 30 s (a busy machine or a sanitizer build
# may take seconds to start). A fault injected earlier would hit a path
# not yet connected.
wait_load() {
	for _ in $(seq 300); do
		grep -Eq '"paths":\[[1-9][0-9]*,[1-9]' "$tmp/$1.err" 2>/dev/null &&
			break
		kill -0 "$bench_pid" 2>/dev/null || break
		sleep 0.1
	done
	grep -Eq '"paths":\[[1-9][0-9]*,[1-9]' "$tmp/$1.err" 2>/dev/null ||
		echo "$1: no load on both paths yet (going on)"
	sleep 2
}

# end_bench NAME: once the path is restored, wait (at most 30 s) for an
# interval line after this point with requests on path 1, let the bench
# run 2 s more, and stop it with SIGINT (it prints its JSON and exits 0).
# A fixed run length left the reconnect too few seconds when the machine
# is slow. Sets $rc (the bench's exit status) and $restored (the number
# of interval lines before the point).
end_bench() {
	local n
	restored=$(grep -c '^{' "$tmp/$1.err")
	for _ in $(seq 300); do
		n=$(tail -n +"$((restored + 1))" "$tmp/$1.err" |
			grep -Ec '^\{.*"paths":\[[0-9]+,[1-9]')
		[ "$n" -gt 0 ] && break
		kill -0 "$bench_pid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 2
	kill -INT "$bench_pid" 2>/dev/null
	wait "$bench_pid"
	rc=$?
}

# check NAME T_FAULT RC RESTORED: the verdict of one scenario.
check() {
	local name=$1 t_fault=$2 rc=$3 restored=$4
	python3 - "$tmp/$name.json" "$tmp/$name.err" "$tmp/srv-stats.json" \
		"$t_fault" "$rc" "$name" "$restored" <<'EOF'
import json, sys
out, err, stats, t_fault, rc, name, restored = sys.argv[1:]
t_fault = float(t_fault)
restored = int(restored)
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
# A killed server is a session loss (a new incarnation): what was in
# flight has an unknown outcome, counted apart and exit status 1 (ibtrs(1));
# never replayed silently. The other faults keep the server session.
unknown = d.get("unknown_outcome", 0)
losses = d.get("session_losses", 0)
if name == "kill":
    if losses < 1:
        fail(f"the restarted server is no session loss ({losses})")
    if not 0 <= unknown <= 64:
        fail(f"unknown outcomes {unknown}, more than were in flight")
    print(f"{name}: session losses {losses}, unknown outcome {unknown}")
elif losses or unknown:
    fail(f"session losses {losses}, unknown outcome {unknown}")
if rc != ("1" if unknown else "0"):
    fail(f"bench exit status {rc} with {unknown} unknown outcomes")
for k in ("errors", "verify_failures", "lost"):
    if d.get(k) != 0:
        fail(f"{k} = {d.get(k)}")
if d.get("ops", 0) <= 0:
    fail("no I/O")
p1 = d["paths"][1]
if p1["reconnects"] < 1:
    fail(f"path 1 did not reconnect: {p1}")
if p1["state"] != "connected":
    fail(f"path 1 ends {p1['state']}")
# Load on path 1 again after the path was restored.
lines = [json.loads(l) for l in open(err) if l.startswith("{")]
after = lines[restored:]
if not after or sum(l["paths"][1] for l in after) == 0:
    fail("path 1 carries no load after the reconnect")
# Detection: the first event about path 1 going away after the fault.
det = None
for e in d.get("events", []):
    if e["path"] == 1 and e["ts"] >= t_fault and "connected ->" in e["msg"]:
        det = e["ts"] - t_fault
        print(f"{name}: path 1: {e['msg']}")
        break
if det is None:
    fail("no path-down event for path 1")
else:
    print(f"{name}: detection time {det * 1000:.0f} ms")
print(f"{name}: longest I/O gap {d['max_gap_ms']:.0f} ms, "
      f"{d['ops']} ops, {d['iops']:.0f} IOPS, "
      f"path 1 failovers {p1['failovers']} reconnects {p1['reconnects']}, "
      f"path 0 failovers {d['paths'][0]['failovers']}")
try:
    s = json.load(open(stats))
    print(f"{name}: server: requests {s['requests']} run twice {s['duplicates']} replays {s['replays']}")
    if s["duplicates"] != 0:
        fail(f"server ran {s['duplicates']} requests twice")
except Exception as e:
    fail(f"no server stats ({e})")
sys.exit(0 if ok else 1)
EOF
	[ $? -eq 0 ] || failed=$((failed + 1))
}

scenario_link() {
	start_server link || return 1
	run_bench link 60
	wait_load link
	local t=$(now)
	netns_link 1 down
	sleep 3
	netns_link 1 up
	end_bench link
	stop_server
	check link "$t" "$rc" "$restored"
}

scenario_drop() {
	command -v nft >/dev/null || {
		echo "FAIL drop: nft missing"
		failed=$((failed + 1))
		return
	}
	start_server drop || return 1
	run_bench drop 60
	wait_load drop
	local t=$(now)
	ip netns exec "$C" nft -f - <<EOF
table inet ibtrs_drop {
	chain out { type filter hook output priority 0; ip daddr 10.250.1.2 drop; }
	chain in { type filter hook input priority 0; ip saddr 10.250.1.2 drop; }
}
EOF
	sleep 3
	ip netns exec "$C" nft delete table inet ibtrs_drop
	end_bench drop
	stop_server
	check drop "$t" "$rc" "$restored"
}

scenario_kill() {
	start_server kill || return 1
	run_bench kill 60
	wait_load kill
	local t=$(now)
	kill -9 "$srv_pid"
	wait "$srv_pid" 2>/dev/null
	srv_pid=
	sleep 1
	start_server kill || return 1
	end_bench kill
	stop_server
	check kill "$t" "$rc" "$restored"
}

scenario_link
scenario_drop
scenario_kill

echo "netns failover: $((3 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
