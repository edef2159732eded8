#!/bin/bash
# SPDX-License-Identifier: MIT
# demo.sh - "ibtrs demo --time 6" runs, exits 0, cuts and restores path 1 on
# the way (at least one failover and one reconnect), and its verdict says
# nothing was lost or run twice and all data verified; its --plot is an
# SVG with a series per path and the cut and the return of path 1 marked.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

out=$TMP/demo.out
run_bounded 60 "$IBTRS" demo --time 6 --plot "$TMP/demo.svg" >"$out" 2>"$TMP/demo.err" &
pid=$!
PIDS+=("$pid")
wait "$pid"
rc=$?
cat "$out"
sed 's/^/stderr: /' "$TMP/demo.err"
[ "$rc" -eq 0 ] || fail "demo exited with $rc"
# One progress line per second, at least four in six seconds.
[ "$(grep -c '^\[' "$out")" -ge 4 ] || fail "too few progress lines"
grep -q '^>>> cutting path 1' "$out" || fail "path 1 was not cut"
grep -q '^>>> restoring path 1' "$out" || fail "path 1 was not restored"
grep -Eq 'event .*path 1: .*connected -> reconnecting' "$out" ||
	fail "no event shows path 1 failing"
grep -Eq 'event .*path 1: .*connecting -> connected' "$out" ||
	fail "no event shows path 1 connected"
line=$(grep -E '^  failovers: [0-9]+, reconnects: [0-9]+$' "$out") ||
	fail "no failover/reconnect summary"
read -r failovers reconnects < <(echo "$line" | tr -dc '0-9 ' | xargs)
[ "$failovers" -ge 1 ] || fail "no failover: $line"
[ "$reconnects" -ge 1 ] || fail "no reconnect: $line"
grep -Eq '^  verified [1-9][0-9]* reads against the data written$' "$out" ||
	fail "no verified reads"
grep -q '^verdict: 0 lost, 0 run twice, all data verified -- OK$' "$out" ||
	fail "the verdict is not '0 lost, 0 run twice, all data verified'"
grep -qx "plot: $TMP/demo.svg" "$out" || fail "the demo does not say where its plot is"
command -v python3 >/dev/null 2>&1 || skip "python3 is needed to read the plot"
python3 - "$TMP/demo.svg" <<'PY' || fail "bad demo plot"
import sys
import xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
series = [l.get("data-path") for l in root.iter(ns + "polyline")
          if l.get("class") == "series"]
assert sorted(series) == ["0", "1"], series
kinds = {(l.get("data-kind"), l.get("data-path"))
         for l in root.iter(ns + "line") if l.get("class") == "event"}
print("events marked:", sorted(kinds))
assert ("down", "1") in kinds and ("back", "1") in kinds, kinds
PY
echo PASS
exit 0
