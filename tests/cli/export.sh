#!/bin/bash
# SPDX-License-Identifier: MIT
# export.sh - "ibtrs server" --export, --export-ro, --export-dir and
# --direct: bad arguments exit 2, exports that cannot be made exit 1, each
# with one "ibtrs: " line naming the cause; good ones start the server and
# log what they export. Where "ibtrs bench --export" exists, the exported
# names are opened through it (and a name not exported is refused).
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

mkdir "$TMP/dir" "$TMP/dir/sub" || fail "mkdir"
truncate -s 1M "$TMP/a.img" "$TMP/dir/one" "$TMP/dir/two" || fail "truncate"
mkfifo "$TMP/dir/fifo" || fail "mkfifo"
ln -s ../a.img "$TMP/dir/link" || fail "ln"

# Syntax: exit 2.
expect_err 2 "expected NAME=PATH" --export a
expect_err 2 "expected NAME=PATH" --export-ro a
expect_err 2 "bad export name 'a/b'" --export "a/b=$TMP/a.img"
expect_err 2 "bad export name '..'" --export "..=$TMP/a.img"
expect_err 2 "bad export name '.'" --export ".=$TMP/a.img"
expect_err 2 "bad export name ''" --export "=$TMP/a.img"
expect_err 2 "bad export name 'a b'" --export "a b=$TMP/a.img"
long=$(printf 'n%.0s' {1..256})
expect_err 2 "bad export name" --export "$long=$TMP/a.img"
expect_err 2 "expected a path after '='" --export "a="
expect_err 2 "the name 'a' is exported twice" \
	--export "a=$TMP/a.img" --export-ro "a=$TMP/a.img"
expect_err 2 "expected a directory" --export-dir ""
expect_err 2 "" --export

# Exports that cannot be made: exit 1.
expect_err 1 "cannot export 'x' ($TMP/nonexistent): No such file or directory" \
	--export "x=$TMP/nonexistent"
expect_err 1 "cannot export 'x' ($TMP/dir): not a regular file or block device" \
	--export "x=$TMP/dir"
# A FIFO is refused, not opened (a read-only open would block).
expect_err 1 "cannot export 'f' ($TMP/dir/fifo): not a regular file or block device" \
	--export-ro "f=$TMP/dir/fifo"
expect_err 1 "cannot export directory '$TMP/a.img': Not a directory" \
	--export-dir "$TMP/a.img"
expect_err 1 "cannot export directory '$TMP/nonexistent': No such file" \
	--export-dir "$TMP/nonexistent"
# A directory's file name taken by an explicit export.
expect_err 1 "cannot export directory '$TMP/dir': a file name is exported already" \
	--export "one=$TMP/a.img" --export-dir "$TMP/dir"
if [ "$(id -u)" -ne 0 ]; then
	chmod 000 "$TMP/a.img"
	expect_err 1 "cannot export 'x' ($TMP/a.img): Permission denied" \
		--export "x=$TMP/a.img"
	chmod 644 "$TMP/a.img"
fi

# --help names the options.
run_bounded 30 "$IBTRS" server --help >"$TMP/help" || fail "server --help"
for o in --export --export-ro --export-dir --export-dir-ro --direct; do
	grep -q -- "$o " "$TMP/help" || fail "server --help lacks $o"
done

# Good exports: the server starts and logs them.
start_server good --port 0 --export "a=$TMP/a.img" --export-ro "b=$TMP/a.img" \
	--export-dir "$TMP/dir"
grep -q "exporting 'a' ($TMP/a.img, read-write)" "$TMP/good.err" ||
	fail "no log of export a: $(cat "$TMP/good.err")"
grep -q "exporting 'b' ($TMP/a.img, read-only)" "$TMP/good.err" ||
	fail "no log of export b"
# one, two and link (a symbolic link to a file); not sub, not fifo
grep -q "exporting 3 file(s) of '$TMP/dir' (read-write)" "$TMP/good.err" ||
	fail "--export-dir did not export 3 files: $(cat "$TMP/good.err")"

# Open the names with the client where the tool has one.
if "$IBTRS" bench --help 2>/dev/null | grep -q -- '--export'; then
	for name in a b one two link; do
		run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 \
			--port "$SRV_PORT" --export "$name" --rw randread \
			--time 1 --qd 1 >"$TMP/bench.out" 2>"$TMP/bench.err" ||
			fail "bench --export $name: $(cat "$TMP/bench.err")"
	done
	for name in sub fifo nosuch; do
		run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 \
			--port "$SRV_PORT" --export "$name" --rw randread \
			--time 1 --qd 1 >"$TMP/bench.out" 2>"$TMP/bench.err" &&
			fail "bench --export $name was served"
		grep -Eqi "no such (export|file)" "$TMP/bench.err" ||
			fail "bench --export $name: $(cat "$TMP/bench.err")"
	done
else
	echo "note: ibtrs bench has no --export yet: names not opened here" \
		"(tests/ibnbd/srv_hostile opens an export directory's names)"
fi
stop_server "$SRV_PID"

# --direct and --export-dir-ro start too.
start_server direct --port 0 --direct --export-dir-ro "$TMP/dir"
grep -q "exporting 3 file(s) of '$TMP/dir' (read-only)" "$TMP/direct.err" ||
	fail "--export-dir-ro: $(cat "$TMP/direct.err")"
stop_server "$SRV_PID"

# Without exports the server starts as before, quietly, and its ibnbd
# server refuses every name.
start_server plain --port 0 --quiet
if "$IBTRS" bench --help 2>/dev/null | grep -q -- '--export'; then
	run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" \
		--export a --rw randread --time 1 --qd 1 >"$TMP/bench.out" \
		2>"$TMP/bench.err" && fail "bench --export a was served"
	grep -Eqi "no such (export|file)" "$TMP/bench.err" ||
		fail "bench --export a, no exports: $(cat "$TMP/bench.err")"
fi
stop_server "$SRV_PID"
[ -s "$TMP/plain.err" ] && fail "a quiet server wrote: $(cat "$TMP/plain.err")"
echo "ok"
exit 0
