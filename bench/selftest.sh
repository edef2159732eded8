#!/bin/sh
# SPDX-License-Identifier: MIT
#
# bench/selftest.sh IBTRS - smoke test of bench/compare against the ibtrs
# binary IBTRS: one 1-second round of the ibtrs rows and the wire ceiling
# (ibtrs-ceiling, next to IBTRS) only, no peers, nothing installed; then check
# that the table was printed with numbers and that the raw JSON holds a figure
# for every measurement.
#
# Exit status: 0 pass, 1 fail, 2 usage, 77 skip (no python3), for CTest's
# SKIP_RETURN_CODE.

if [ $# -ne 1 ]; then
	echo "usage: $0 PATH-TO-ibtrs" >&2
	exit 2
fi
bin=$1
if ! command -v python3 >/dev/null 2>&1; then
	echo "SKIP: python3 not found"
	exit 77
fi
if [ ! -x "$bin" ]; then
	echo "FAIL: $bin is not an executable" >&2
	exit 1
fi

here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ibtrs-bench-selftest.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

# The compare script bounds each of its processes; this bounds the whole.
timeout -k 5 180 python3 "$here/compare" --quick --rounds 1 --time 1 \
	--only ibtrs,wire --no-install --ibtrs "$bin" --json "$tmp/raw.json" \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
fail() {
	echo "FAIL: $*" >&2
	echo "--- stdout" >&2
	cat "$tmp/out" >&2
	echo "--- stderr" >&2
	tail -n 20 "$tmp/err" >&2
	exit 1
}
[ $rc -eq 0 ] || fail "bench/compare exited with status $rc"

# Every ibtrs row of the comparison table carries a number in its ibtrs
# column (e.g. "4 KiB WRITE QD64  k/s  147.5k  ...").
for row in "4 KiB WRITE QD64" "4 KiB READ QD64" "128 KiB WRITE QD16" \
	"128 KiB READ QD16" "QD1 4 KiB READ p50" "QD1 4 KiB READ p99" \
	"4 KiB READ, 4 threads x QD64" "4 KiB READ, 16 threads x QD64" \
	"4 KiB READ QD64 split, 16 threads" \
	"QD1 4 KiB READ p50, busy poll" "4 KiB WRITE QD64, mem target" \
	"4 KiB WRITE QD64, adaptive poll" "4 KiB READ QD64, adaptive poll"; do
	line=$(grep -F -- "$row " "$tmp/out" | grep -v '^ofi:' | head -n 1)
	[ -n "$line" ] || fail "row '$row' missing from the table"
	rest=${line#"$row"}
	echo "$rest" | grep -Eq '^ +(k/s|GB/s|us) +[0-9]+(\.[0-9]+)?k? ' ||
		fail "row '$row' has no number: $line"
done
# The ceiling rows: a ratio to the raw TCP loop's figure.
n=$(grep -Ec 'raw TCP loop, busy poll +[0-9]+(\.[0-9]+)?k .* [0-9]+\.[0-9]+x ' \
	"$tmp/out")
[ "$n" -eq 2 ] || fail "expected 2 rows against the raw TCP loop, got $n"
grep -q '^row ' "$tmp/out" || fail "table header missing"
grep -q '^Load average' "$tmp/out" || fail "load average line missing"
# The header names the congestion control every socket of the run got.
cc=$(cat /proc/sys/net/ipv4/tcp_congestion_control 2>/dev/null || echo n/a)
grep -q "^TCP congestion control: $cc " "$tmp/out" ||
	fail "header does not say the congestion control ($cc)"

# ...and the host it ran on: the CPU model and the number of CPUs.
model=$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -n 1)
host="${model:-unknown CPU}, $(getconf _NPROCESSORS_ONLN) CPUs"
grep -qF "host: $host" "$tmp/out" || fail "header does not name the host: $host"

python3 - "$tmp/raw.json" <<'EOF' || fail "raw JSON check failed"
import json, sys
d = json.load(open(sys.argv[1]))
runs = d["rounds"][0]["runs"]
if "CPUs" not in d.get("host", ""):
    sys.exit("no host in the raw JSON: %r" % d.get("host"))
want = ["ibtrs.w4k", "ibtrs.r4k", "ibtrs.w4kmem", "ibtrs.r4kmem",
        "ibtrs.w128k", "ibtrs.r128k", "ibtrs.lat", "ibtrs.latbp", "ibtrs.t1",
        "ibtrs.t4", "ibtrs.t16", "ibtrs.t4x", "ibtrs.t16x"]
bad = [k for k in want if not (runs.get(k, {}).get("kiops", 0) > 0)]
if bad:
    sys.exit("no figure for %s" % ", ".join(bad))
# The CPU time per request of both sides, as the bench reports it.
bad = [k for k in want if not (runs[k].get("cli_cpu_us_req", 0) > 0 and
                               runs[k].get("srv_cpu_us_req", 0) > 0)]
if bad:
    sys.exit("no CPU time per request for %s" % ", ".join(bad))
# Callback mode submits from the callbacks, thread mode never.
if not runs["ibtrs.w4k"]["json"]["callback_submits"] > 0:
    sys.exit("ibtrs.w4k did not submit from the completion callback")
if runs["ibtrs.t4"]["json"]["callback_submits"] != 0:
    sys.exit("ibtrs.t4 submitted from the completion callback")
# QD 64 per thread: 16 x 64 in flight asked for.
if runs["ibtrs.t16x"]["json"]["qd_requested"] != 1024:
    sys.exit("ibtrs.t16x did not run 16 x QD 64")
if runs["ibtrs.lat"]["p50"] <= 0:
    sys.exit("QD1 p50 is not positive")
# The polling rows ran as they say.
for k, adaptive in (("ibtrs.w4kbp", False), ("ibtrs.w4kap", True),
                    ("ibtrs.r4kap", True)):
    j = runs[k]["json"]
    if j["busy_poll_us"] != 200 or j["busy_poll_adaptive"] != adaptive:
        sys.exit("%s did not poll as asked: %s" % (k, j))
if runs["ibtrs.w4k"]["json"]["busy_poll_us"] != 0:
    sys.exit("ibtrs.w4k polled")
# The ceiling ran, polling, and reported both sides' CPU time.
for k in ("wire.w4kbp", "wire.r4kbp"):
    w = runs.get(k, {})
    if not (w.get("kiops", 0) > 0 and w["json"]["busy_poll"] and
            w["cli_cpu_us_req"] > 0 and w["srv_cpu_us_req"] > 0):
        sys.exit("no ceiling figure for %s: %s" % (k, w))
EOF

# The placement probe: where it gave figures, two per measurement (before
# and after) and the CPU placement section printed from them. How many
# measurements it gave figures for, and how fast, is the host's doing (a
# busy host or a sanitizer build can time it out): compare prints it, and
# the section's logic is checked on made-up figures below.
python3 - "$tmp/raw.json" "$tmp/out" <<'EOF' || fail "placement probe check failed"
import json, sys
d = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read()
runs = d["rounds"][0]["runs"]
probed = {k: r["xcore_gbps"] for k, r in runs.items() if "xcore_gbps" in r}
bad = {k: x for k, x in probed.items()
       if not (isinstance(x, list) and len(x) == 2 and
               all(isinstance(v, (int, float)) and v >= 0 for v in x))}
if bad:
    sys.exit("probe figures are not two numbers: %s" % bad)
pl = d["placement"]
if not pl.get("probe") or "ref_gbps" not in pl:
    sys.exit("no placement section in the raw JSON: %s" % pl)
shown = "\nCPU placement: ibtrs-xcore handed 4 KiB blocks" in out
if probed:
    if not shown:
        sys.exit("probe figures for %s but no CPU placement section"
                 % ", ".join(sorted(probed)))
    if any(x for v in probed.values() for x in v) and not pl["ref_gbps"] > 0:
        sys.exit("probe figures but no reference figure: %s" % pl)
    missing = len(runs) - len(probed)
    if missing and ("no probe figures around %d measurement(s)" % missing
                    not in out):
        sys.exit("%d measurement(s) without probe figures, not said"
                 % missing)
elif shown:
    sys.exit("a CPU placement section without probe figures")
print("placement probe: figures around %d of %d measurement(s)"
      % (len(probed), len(runs)))
EOF

# Runs the Python on stdin with bench/compare imported as c (and sys);
# arguments are sys.argv[1:].
with_compare() {
	python3 -c "import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader('compare', '$here/compare')
spec = importlib.util.spec_from_loader('compare', loader)
c = importlib.util.module_from_spec(spec)
loader.exec_module(c)
exec(compile(sys.stdin.read(), 'selftest', 'exec'))" "$@"
}

# How the table splits rounds by placement, on made-up figures: UCX near in
# rounds 1-3 and far in 4-5; ibtrs.w4k near in 1-2, far in 3 (left out:
# placed unlike its peer), far in 4, moved in 5 (left out).
with_compare <<'EOF' || fail "placement split check failed"
import contextlib, io
near, far = [8.0, 8.2], [2.0, 2.1]
ours = [(800, near), (900, near), (400, far), (300, far), (500, [8.0, 2.0])]
peer = [(200, near), (200, near), (200, near), (100, far), (100, far)]
res = [{"round": i + 1, "runs": {
    "ibtrs.w4k": {"kiops": o[0], "xcore_gbps": o[1]},
    "ucx": {"kiops": p[0], "xcore_gbps": p[1]}}}
    for i, (o, p) in enumerate(zip(ours, peer))]


class Comp:
    results = res
    notes = {}


rows = c.summarize(Comp, {"ibtrs.w4k", "ucx"})
row = [r for r in rows if r["peer_key"] == "ucx"][0]
by = row["ratio_by_placement"]
if by != {"near": [4.0, 4.5], "far": [3.0]}:
    sys.exit("rounds split wrong: %s" % by)
got = [c.placement(r["runs"]["ibtrs.w4k"], 8.2) for r in res]
if got != ["near", "near", "far", "far", "mixed"]:
    sys.exit("placement wrong: %s" % got)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    c.print_placement(Comp, rows)
text = out.getvalue()
for want in ("near (both probes >= 4.10 GB/s, half the run's 90th "
             "percentile): 5 "
             "measurement(s); far (both below): 4; moved during the "
             "measurement: 1.",
             "4.25x (2)", "3.00x (1)"):
    if want not in text:
        sys.exit("placement section lacks %r:\n%s" % (want, text))

# One stray probe pair far above the rest leaves the others near.
res = [{"round": 1, "runs": {"m%d" % i: {"xcore_gbps": [12.0, 12.5]}
                             for i in range(20)}}]
res[0]["runs"]["m0"]["xcore_gbps"] = [60.0, 59.0]
ref = c.place_ref(res)
got = {c.placement(r, ref) for k, r in res[0]["runs"].items() if k != "m0"}
if got != {"near"}:
    sys.exit("one stray probe (reference %s) made the others %s" % (ref, got))
EOF

# The "mem" rows' target holds data: 64 MiB without a zero byte, so that a
# READ copies memory and not the kernel's zero page; removed at the end.
with_compare "$tmp" <<'EOF' || fail "memory target check failed"
import os
comp = c.Compare(None, sys.argv[1])
path = comp.target_file()
try:
    if comp.target_file() != path:
        sys.exit("a second target file was made")
    data = open(path, "rb").read()
    if len(data) != 64 << 20 or data.count(0):
        sys.exit("target: %d bytes, %d zero bytes"
                 % (len(data), data.count(0)))
    comp.remove_target()
    if os.path.exists(path):
        sys.exit("target file %s left behind" % path)
finally:
    if os.path.exists(path):
        os.unlink(path)
EOF

# What compare says of an --idle-poll run's idle entries, on made-up
# counters: a sysfs tree of two CPUs, then the verdicts.
with_compare "$tmp" <<'EOF' || fail "idle entries check failed"
import os
base = os.path.join(sys.argv[1], "sys-cpu")
for cpu, states in (("cpu0", {"POLL": 7, "C1": 1}),
                    ("cpu1", {"POLL": 5, "C1": 0})):
    for i, (name, usage) in enumerate(states.items()):
        d = os.path.join(base, cpu, "cpuidle", "state%d" % i)
        os.makedirs(d)
        open(os.path.join(d, "name"), "w").write(name + "\n")
        open(os.path.join(d, "usage"), "w").write("%d\n" % usage)
os.makedirs(os.path.join(base, "cpufreq"))
got = c.idle_entries(base)
if got != {"POLL": 12, "C1": 1}:
    sys.exit("idle entries read wrong: %s" % got)
if c.idle_entries(os.path.join(sys.argv[1], "none")) != {}:
    sys.exit("idle entries without a sysfs tree")
for idle, ncpu, want in (({"POLL": 12, "C1": 1}, 2, True),
                         ({"POLL": 12, "C1": 2, "C2": 1}, 2, False),
                         ({"POLL": 0, "C1": 1}, 2, None),
                         ({"haltpoll idle": 0, "POLL": 0}, 2, None),
                         ({}, 2, None)):
    held, why = c.idle_poll_held(idle, ncpu)
    if held is not want or not why:
        sys.exit("idle_poll_held(%s, %d) = %s, %r, not %s"
                 % (idle, ncpu, held, why, want))
EOF

# --idle-poll runs and says so in its header, with what the idle counters
# showed; whether idle CPUs polled is the host's (its cpuidle driver, how
# busy it is) and is printed, not checked. Needs the PM QoS device (root).
if [ ! -w /dev/cpu_dma_latency ]; then
	echo "PASS: bench/compare printed the table with ibtrs figures" \
		"(--idle-poll not run: no writable /dev/cpu_dma_latency)"
	exit 0
fi
timeout -k 5 60 python3 "$here/compare" --idle-poll --quick --rounds 1 \
	--time 1 --only ibtrs.lat --no-install --ibtrs "$bin" \
	--json "$tmp/idle.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "bench/compare --idle-poll exited with status $rc"
grep -q '^idle CPUs: poll ' "$tmp/out" || fail "--idle-poll not in the header"
grep -Eq '^idle poll request: (held|NOT held|not shown): .' "$tmp/out" ||
	fail "--idle-poll run does not say what the idle counters showed"
python3 - "$tmp/idle.json" <<'EOF' || fail "--idle-poll JSON check failed"
import json, sys
d = json.load(open(sys.argv[1]))
if not d["args"]["idle_poll"]:
    sys.exit("the raw JSON does not record --idle-poll")
held = d["idle_poll_held"]
if not (isinstance(held, list) and len(held) == 2 and
        held[0] in (True, False, None) and held[1]):
    sys.exit("no idle poll verdict in the raw JSON: %r" % (held,))
if not d["rounds"][0]["runs"].get("ibtrs.lat", {}).get("p50", 0) > 0:
    sys.exit("no QD1 figure under --idle-poll")
EOF
grep '^idle poll request: ' "$tmp/out"

echo "PASS: bench/compare printed the table with ibtrs figures; --idle-poll"
exit 0
