#!/bin/bash
# SPDX-License-Identifier: MIT
# allow.sh - "ibtrs server --allow IDENTITY:EXPORT": which client
# identities may open which ibnbd exports. Bad rules exit 2 naming the
# cause; a server with rules logs them; an export a rule allows to this
# client's identity ("addr:127.0.0.1" without keys) opens through
# "ibtrs bench --export", one no rule allows is refused with "access
# denied" (and the server logs the refusal), and the memory target is
# not concerned. Without rules every export opens (tests/cli/export.sh).
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

# expect_err STATUS PATTERN ARGS...: "ibtrs server --port 0 ARGS" fails
# with STATUS and one line on stderr matching PATTERN.
expect_err() {
	local want=$1 pat=$2
	shift 2
	expect "$want" server --port 0 "$@"
	grep -q -- "$pat" "$TMP/err" ||
		fail "ibtrs server $*: stderr lacks '$pat': $(cat "$TMP/err")"
}

# bench_export NAME: a short read run against export NAME; its stderr in
# $TMP/bench.err, its exit status returned.
bench_export() {
	run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" \
		--export "$1" --rw randread --time 0.3 --qd 1 --quiet \
		>"$TMP/bench.out" 2>"$TMP/bench.err"
}

truncate -s 1M "$TMP/pub.img" "$TMP/priv.img" || fail "truncate"

expect_err 2 "expected IDENTITY:EXPORT" --allow alice
expect_err 2 "expected IDENTITY:EXPORT" --allow ":disk"
expect_err 2 "expected IDENTITY:EXPORT" --allow "alice:"
expect_err 2 "expected IDENTITY:EXPORT" --allow ""
expect_err 2 "without '/'" --allow "alice:a/b"
long=$(printf 'i%.0s' {1..256})
expect_err 2 "at most 255 bytes" --allow "$long:disk"

start_server probe --port 0 --quiet --export "pub=$TMP/pub.img"
bench_export pub
rc=$?
stop_server "$SRV_PID"
if [ "$rc" -ne 0 ] && grep -q "does the server serve exports" "$TMP/bench.err"; then
	skip "the ibnbd server is not available here: $(cat "$TMP/bench.err")"
fi
[ "$rc" -eq 0 ] || fail "bench --export pub: $(cat "$TMP/bench.err")"

# The identity of a client without keys is its address; the last ':'
# splits the rule. Patterns on both sides.
start_server rules --port 0 --export "pub=$TMP/pub.img" \
	--export "priv=$TMP/priv.img" --allow 'addr:127.0.0.1:pu?' \
	--allow 'alice:*' --allow 'addr:10.*:priv'
grep -q "exports open only as --allow says: addr:127.0.0.1:pu?, alice:\*, addr:10.\*:priv" \
	"$TMP/rules.err" || fail "rules not logged: $(cat "$TMP/rules.err")"

bench_export pub || fail "an allowed export was refused: $(cat "$TMP/bench.err")"
bench_export priv && fail "export priv opened by an identity no rule allows"
grep -q "cannot open export 'priv': access denied" "$TMP/bench.err" ||
	fail "the refusal does not say access was denied: $(cat "$TMP/bench.err")"
# A name that does not exist is refused the same way: nothing to probe.
bench_export nosuch && fail "export nosuch opened"
grep -q "access denied" "$TMP/bench.err" ||
	fail "a refused identity learned that nosuch does not exist: $(cat "$TMP/bench.err")"
grep -q "ibnbd open refused by --allow" "$TMP/rules.err" ||
	fail "the server did not log the refusal: $(cat "$TMP/rules.err")"
grep -q "of addr:127.0.0.1: ibnbd open refused" "$TMP/rules.err" ||
	fail "the refusal does not name the identity: $(cat "$TMP/rules.err")"
# The memory target is not an export: the rules do not touch it.
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" \
	--verify --time 0.3 --quiet >"$TMP/mem.out" 2>"$TMP/mem.err" ||
	fail "the memory target was refused: $(cat "$TMP/mem.err")"
stop_server "$SRV_PID"

# A rule for everyone on one export, IPv4 or IPv6 address identities.
start_server star --port 0 --quiet --export "pub=$TMP/pub.img" \
	--export "priv=$TMP/priv.img" --allow '*:priv'
bench_export priv || fail "'*:priv' refused priv: $(cat "$TMP/bench.err")"
bench_export pub && fail "'*:priv' let pub open"
stop_server "$SRV_PID"
echo "ok"
exit 0
