#!/bin/bash
# SPDX-License-Identifier: MIT
# fio.sh - "ibtrs bench" speaks fio's language: --rw read|write (in order),
# randread|randwrite|rw|randrw with --rwmixread, --bs 4KiB, --iodepth,
# --numjobs, --runtime with units, --output-format=json; it reports the
# latency as fio's clat block (min, mean, max, p50..p99.99), says when
# the session's queue depth bounds --iodepth, prints one interval line per
# whole second, and draws --plot as SVG with a series per path and the
# events of a failover. Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

command -v python3 >/dev/null 2>&1 || skip "python3 is needed to read the output"
export IBTRS_RUNTIME_DIR
IBTRS_RUNTIME_DIR=$(mktemp -d "$TMP/rt.XXXXXX") || fail "mktemp"
unset IBTRS_FAULT

# Usage: the new words and their limits.
expect 2 bench --path ip:127.0.0.1 --rw sequential
expect 2 bench --path ip:127.0.0.1 --rwmixread 101
expect 2 bench --path ip:127.0.0.1 --output-format xml
expect 2 bench --path ip:127.0.0.1 --runtime 10x
expect 2 bench --path ip:127.0.0.1 --bs 4KB2
expect 2 bench --path ip:127.0.0.1 --iodepth 0
expect 2 bench --path ip:127.0.0.1 --numjobs 0
"$IBTRS" bench --help >"$TMP/help" || fail "bench --help"
grep -q -- "--events  *add the session's event log" "$TMP/help" ||
	fail "--events help: $(grep -- --events "$TMP/help")"
grep -q "with --json, add" "$TMP/help" && fail "--events still said to need --json"

# j FILE EXPR: evaluate a Python expression on the JSON result d.
j() {
	python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$@"
}

start_server srv --port 0 --quiet --backing-file "$TMP/disk"
port=$SRV_PORT

# --rw write is in order: a short run at depth 1 writes (patterns, with
# --verify) a prefix of the target (the random mix would scatter its
# blocks over all of it).
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--rw write --bs 1KiB --iodepth 1 --numjobs 1 --runtime 200ms --verify \
	--output-format=json >"$TMP/w.json" 2>"$TMP/w.err" ||
	fail "write: exit $?: $(cat "$TMP/w.err")"
cat "$TMP/w.json"
j "$TMP/w.json" 'd["rw"] == "write" and d["bs"] == 1024 and d["read_ops"] == 0 and 0 < d["write_ops"] < 65536' ||
	fail "--rw write: wrong mix or sizes"
python3 - "$TMP/disk" <<'PY' || fail "--rw write did not write in order"
import sys
data = open(sys.argv[1], "rb").read()
bs = 1024
written = [i for i in range(len(data) // bs)
           if data[i * bs:(i + 1) * bs].count(0) != bs]
print("blocks written: %d, first %s, last %s" %
      (len(written), written[:1], written[-1:]))
sys.exit(0 if written and written == list(range(len(written))) else 1)
PY

# The other mixes, their names and the mix ratio.
for rw in read randread randwrite; do
	run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
		--rw "$rw" --bs 4KiB --runtime 0.5s --json >"$TMP/m.json" 2>"$TMP/m.err" ||
		fail "$rw: exit $?: $(cat "$TMP/m.err")"
	case $rw in
	*read) want='d["write_ops"] == 0 and d["read_ops"] > 0' ;;
	*) want='d["read_ops"] == 0 and d["write_ops"] > 0' ;;
	esac
	j "$TMP/m.json" "d['rw'] == '$rw' and d['bs'] == 4096 and $want" ||
		fail "--rw $rw: wrong mix"
done
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--rw rw --rwmixread 100 --runtime 0.5 --json >"$TMP/m.json" ||
	fail "rw: exit $?"
j "$TMP/m.json" 'd["rw"] == "rw" and d["rwmixread"] == 100 and d["write_ops"] == 0' ||
	fail "--rwmixread 100 wrote"
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--rw randrw --rwmixread 0 --runtime 0.5 --json >"$TMP/m.json" ||
	fail "randrw: exit $?"
j "$TMP/m.json" 'd["read_ops"] == 0 and d["write_ops"] > 0' ||
	fail "--rwmixread 0 read"

# --iodepth beyond the session's queue depth: said, and reported as it
# was; --runtime 3 gives 3 interval lines; the clat block.
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--iodepth 1000 --runtime 3 --interval-json --json \
	>"$TMP/qd.json" 2>"$TMP/qd.err" || fail "qd: exit $?: $(cat "$TMP/qd.err")"
cat "$TMP/qd.json" "$TMP/qd.err"
grep -q "warning: --iodepth 1000: at most 128 requests in flight (the session's queue depth" \
	"$TMP/qd.err" || fail "--iodepth 1000 capped silently"
[ "$(grep -c '^{' "$TMP/qd.err")" -eq 3 ] || fail "not 3 interval lines in 3 s"
j "$TMP/qd.json" 'd["qd"] == 128 and d["qd_requested"] == 1000' ||
	fail "JSON says qd 1000"
j "$TMP/qd.json" 'all(k in d["lat_us"] for k in ("min", "mean", "max", "p50", "p90", "p99", "p999", "p9999")) and d["lat_us"]["min"] <= d["lat_us"]["p50"] <= d["lat_us"]["p90"] <= d["lat_us"]["p99"] <= d["lat_us"]["p999"] <= d["lat_us"]["p9999"] <= d["lat_us"]["max"] and all("max" in p["lat_us"] for p in d["paths"])' ||
	fail "no clat block in the JSON"

# The table: the same figures, and the depth that was in flight.
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$port" \
	--qd 1000 --time 0.5 --quiet >"$TMP/t.out" 2>"$TMP/t.err" || fail "table: exit $?"
cat "$TMP/t.out"
grep -q "iodepth=128 (1000 asked)" "$TMP/t.out" || fail "table says iodepth 1000"
grep -Eq '^  clat \(us\): min=[0-9.]+, max=[0-9.]+, avg=[0-9.]+$' "$TMP/t.out" ||
	fail "no clat min/max/avg line"
grep -Eq '^  clat percentiles \(us\): p50=[0-9.]+, p90=[0-9.]+, p99=[0-9.]+, p99\.9=[0-9.]+, p99\.99=[0-9.]+$' \
	"$TMP/t.out" || fail "no clat percentiles line"
[ -s "$TMP/t.err" ] && fail "--quiet wrote on stderr"

# --runtime 1m is taken (the run fails for want of a server, exit 1).
expect 1 bench --path ip:127.0.0.1 --port 1 --runtime 1m --quiet

# --plot of a failover: path 1 dropped after 1 s, back once the drop is
# cleared; the run is ended by SIGINT a second after path 1 is connected
# again (a loaded host may take long to reconnect).
stop_server "$SRV_PID"
start_server srv2 --port 0 --quiet
# timeout(1) itself, not run_bounded in a background subshell: such a
# subshell ignores SIGINT, which must reach the bench.
IBTRS_FAULT=1:drop@1000 timeout -k 5 90 "$IBTRS" bench --path ip:127.0.0.1 \
	--path ip:127.0.0.2,ip:127.0.0.1 --port "$SRV_PORT" --runtime 120 \
	--hb-timeout 300 --reconnect-delay 0 --quiet --json \
	--plot "$TMP/plot.svg" >"$TMP/p.json" 2>"$TMP/p.err" &
bpid=$!
PIDS+=("$bpid")
t_start=$(date +%s)
# Clear the drop once path 1 is down, so that it comes back.
for ((i = 0; i < 100; i++)); do
	run_bounded 20 "$IBTRS" status --json 2>/dev/null | grep -q '"state":"reconnecting"' && break
	sleep 0.1
done
run_bounded 20 "$IBTRS" fault "$(run_bounded 20 "$IBTRS" status --json |
	python3 -c 'import json,sys; print([c["sessname"] for p in json.load(sys.stdin) for c in p["clients"]][0])')" 1 none >/dev/null ||
	fail "cannot clear the fault"
for ((i = 0; i < 300; i++)); do
	run_bounded 20 "$IBTRS" status --json 2>/dev/null |
		python3 -c 'import json, sys
c = [c for p in json.load(sys.stdin) for c in p["clients"]]
sys.exit(0 if c and len(c[0]["paths"]) == 2 and
         all(x["state"] == "connected" for x in c[0]["paths"]) else 1)' 2>/dev/null && break
	kill -0 "$bpid" 2>/dev/null || break
	sleep 0.1
done
# A second with both paths, for the plot to show it, and at least 5 s in
# all (a line of 4 points or more), then the end (SIGINT, which timeout(1)
# passes on).
sleep 1
while [ $(($(date +%s) - t_start)) -lt 5 ]; do
	sleep 0.2
done
kill -INT "$bpid" 2>/dev/null
wait "$bpid"
rc=$?
[ "$rc" -eq 0 ] || fail "plot bench: exit $rc: $(cat "$TMP/p.err")"
python3 - "$TMP/plot.svg" <<'PY' || fail "bad SVG: $(head -c 400 "$TMP/plot.svg")"
import sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg", root.tag
lines = root.findall(ns + "polyline")
series = [l for l in lines if l.get("class") == "series"]
assert sorted(l.get("data-path") for l in series) == ["0", "1"], series
assert all(len(l.get("points").split()) >= 3 for l in series), "short series"
p99 = [l for l in lines if l.get("class") == "p99"]
mx = [l for l in lines if l.get("class") == "max"]
assert p99, "no p99 line"
assert mx, "no line of the longest latency"
# Per second the longest is at or above the p99 (a smaller y; the latency
# axis is logarithmic, the same for both).
pts = lambda l: [tuple(map(float, p.split(","))) for p in l.get("points").split()]
a, b = pts(p99[0]), pts(mx[0])
assert len(a) == len(b) and len(a) >= 3, (len(a), len(b))
assert all(abs(pa[0] - pb[0]) < 0.5 and pb[1] <= pa[1] + 0.5
           for pa, pb in zip(a, b)), list(zip(a, b))
ev = [l for l in root.findall(ns + "line") if l.get("class") == "event"]
kinds = {(l.get("data-kind"), l.get("data-path")) for l in ev}
print("events marked:", sorted(kinds))
assert ("down", "1") in kinds, kinds
assert ("back", "1") in kinds, kinds
PY
stop_server "$SRV_PID"
echo PASS
exit 0
