#!/usr/bin/env bash
# Build the libFuzzer targets of tests/fuzz if needed, run each for SECONDS
# (default 60) under nice, and print a table: executions, edges covered
# (libFuzzer's cov:), features, corpus size, speed and time per target.
#
#   scripts/fuzz.sh [SECONDS]
#
# Environment:
#   FUZZ_BUILD_DIR  build directory (default build-fuzz); configured with
#                   clang and -DIBTRS_FUZZ=ON when it has no cache yet
#   FUZZ_TARGETS    the targets to run (default all), e.g. "srv tcp_frames"
#   FUZZ_RUNS       stop each target after this many executions instead
#                   (SECONDS then still bounds it)
#   FUZZ_JOBS       targets run at once (default 1)
#   FUZZ_REPORT=1   run nothing: print the table of the targets' last runs
#                   and the totals of all runs so far
# New inputs go to FUZZ_BUILD_DIR/fuzz-work/<target>, findings to
# FUZZ_BUILD_DIR/fuzz-findings/<target>/; the committed corpus
# (tests/fuzz/corpus) is read, never written, so that runs add up: each
# starts from the inputs of the earlier ones. Every run is appended to
# FUZZ_BUILD_DIR/fuzz-runs.tsv (date, target, executions, edges, seconds,
# result), whose totals per target end the table. The exit status is 1
# when a target found something. A target stopped by SIGINT (libFuzzer's
# exit status 72) counts its executions so far, as "interrupted".
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD
secs=${1:-60}
dir=${FUZZ_BUILD_DIR:-build-fuzz}
jobs=${FUZZ_JOBS:-1}

case $secs in '' | *[!0-9]*)
	echo "usage: $0 [SECONDS]" >&2
	exit 2
	;;
esac
if ! command -v clang >/dev/null; then
	echo "fuzz: clang not found (apt-get install clang libclang-rt-dev)" >&2
	exit 77
fi
mkdir -p "$dir"
log=$dir/fuzz-build.log
if [ ! -f "$dir/CMakeCache.txt" ]; then
	CC=clang cmake -S . -B "$dir" -DIBTRS_FUZZ=ON \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >"$log" 2>&1 ||
		{ cat "$log"; exit 1; }
fi
if [ "${FUZZ_REPORT:-0}" != 1 ]; then
	nice -n 19 cmake --build "$dir" --target fuzz -j"$(nproc)" >>"$log" 2>&1 ||
		{ tail -40 "$log"; exit 1; }
fi

targets=${FUZZ_TARGETS:-$(cd "$dir" && ls fuzz_* | sed -n 's/^fuzz_//p' | grep -v '^gen$')}
mkdir -p "$dir/fuzz-work" "$dir/fuzz-findings" "$dir/fuzz-logs"

run_one() { # target
	local t=$1 dict args=() max_len=4096
	dict=$src/tests/fuzz/dict/$t.dict
	case $t in
	ibnbd_*) [ -f "$dict" ] || dict=$src/tests/fuzz/dict/ibnbd.dict ;;
	*) [ -f "$dict" ] || dict=$src/tests/fuzz/dict/ibtrs.dict ;;
	esac
	# clt reads at most CLT_MAX_STEPS steps of a few bytes each (clt_prog.h):
	# bytes past 512 are never read, and their mutations change nothing.
	[ "$t" = clt ] && max_len=512
	[ -n "${FUZZ_RUNS:-}" ] && args+=(-runs="$FUZZ_RUNS")
	mkdir -p "$dir/fuzz-work/$t" "$dir/fuzz-findings/$t"
	local start=$SECONDS
	nice -n 19 "$dir/fuzz_$t" -max_total_time="$secs" -max_len="$max_len" \
		-timeout=30 -print_final_stats=1 -dict="$dict" \
		-artifact_prefix="$dir/fuzz-findings/$t/" "${args[@]}" \
		"$dir/fuzz-work/$t" "$src/tests/fuzz/corpus/$t" \
		>"$dir/fuzz-logs/$t.log" 2>&1
	echo "$? $((SECONDS - start))" >"$dir/fuzz-logs/$t.rc"
}

running=0
[ "${FUZZ_REPORT:-0}" = 1 ] && targets_run= || targets_run=$targets
for t in $targets_run; do
	echo "fuzz: $t (${secs}s)" >&2
	run_one "$t" &
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait

found=0
printf '%-22s %12s %6s %7s %7s %9s %6s  %s\n' target execs cov ft corpus \
	exec/s secs result
for t in $targets; do
	log=$dir/fuzz-logs/$t.log
	[ -f "$dir/fuzz-logs/$t.rc" ] || continue
	read -r rc took <"$dir/fuzz-logs/$t.rc"
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	corp=$(sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p' <<<"$last")
	result=ok
	# 72: libFuzzer's exit after SIGINT (-interrupt_exit_code), with its
	# final stats: the executions so far count, and nothing was found.
	if [ "$rc" = 72 ]; then
		result=interrupted
	elif [ "$rc" != 0 ]; then
		result="FOUND (rc $rc): $(ls "$dir/fuzz-findings/$t" | head -1)"
		found=1
	fi
	printf '%-22s %12s %6s %7s %7s %9s %6s  %s\n' "$t" "${execs:-?}" \
		"${cov:-?}" "${ft:-?}" "${corp:-?}" "${speed:-?}" "$took" "$result"
	# Each run once: a report (FUZZ_REPORT=1) runs nothing.
	if [ "${FUZZ_REPORT:-0}" != 1 ]; then
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" \
			"${execs:-0}" "${cov:-0}" "$took" "${result%%:*}" \
			>>"$dir/fuzz-runs.tsv"
	fi
done
if [ -f "$dir/fuzz-runs.tsv" ]; then
	echo "all runs ($dir/fuzz-runs.tsv):"
	printf '%-22s %5s %14s %6s %8s\n' target runs execs cov secs
	awk -F'\t' '{ n[$2]++; e[$2] += $3; s[$2] += $5;
		if ($4 > c[$2]) c[$2] = $4 }
		END { for (t in n) printf "%-22s %5d %14d %6d %8d\n", t, n[t],
			e[t], c[t], s[t] }' "$dir/fuzz-runs.tsv" | sort
fi
[ "$found" -eq 0 ] || echo "logs: $dir/fuzz-logs, inputs: $dir/fuzz-findings" >&2
exit "$found"
