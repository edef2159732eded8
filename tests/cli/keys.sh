#!/bin/bash
# SPDX-License-Identifier: MIT
# keys.sh - the security options of "ibtrs server", "bench" and "demo":
# --tls, --tls-psk and --identity (and IBTRS_TLS, IBTRS_TLS_PSK,
# IBTRS_IDENTITY in their place). A bad mode, a missing key file, one
# readable by others, an identity not in it exit 2 with one line naming
# the cause, before anything connects; the per-client limits take only
# sane values. A server with a key file says so at start, and a
# "bench --verify" with the matching key passes; with a different key it
# fails with a message about the key.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

# shellcheck source-path=SCRIPTDIR source=common.bash
. "$(dirname "$0")/common.bash"

# mkkeys FILE IDENTITY...: a key file of psktool's format, mode 0600.
mkkeys() {
	local f=$1 id
	shift
	rm -f "$f"
	for id in "$@"; do
		if command -v psktool >/dev/null; then
			psktool -u "$id" -p "$f" >/dev/null ||
				fail "psktool -u $id -p $f"
		else
			(umask 077 && printf '%s:%s\n' "$id" \
				"$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" \
				>>"$f")
		fi
	done
	chmod 600 "$f"
}

# expect_err STATUS PATTERN CMD ARGS...: "ibtrs CMD ARGS" fails with STATUS
# and one line on stderr matching PATTERN.
expect_err() {
	local want=$1 pat=$2
	shift 2
	expect "$want" "$@"
	grep -q -- "$pat" "$TMP/err" ||
		fail "ibtrs $*: stderr lacks '$pat': $(cat "$TMP/err")"
}

mkkeys "$TMP/keys.psk" alice bob
# The same identity with another key: what a stranger would guess.
mkkeys "$TMP/other.psk" alice
cp "$TMP/keys.psk" "$TMP/open.psk" || fail "cp"
chmod 644 "$TMP/open.psk" || fail "chmod"

unset IBTRS_TLS IBTRS_TLS_PSK IBTRS_IDENTITY
# Nothing listens on port 1: these must fail before connecting anyway.
clt=(--path ip:127.0.0.1 --port 1 --time 1)
for cmd in "server --port 0" "bench ${clt[*]}" "demo --time 1"; do
	# shellcheck disable=SC2086
	set -- $cmd
	expect_err 2 "invalid --tls 'maybe': expected off, on or require" \
		"$@" --tls maybe
	expect_err 2 "invalid --tls-psk '': expected a key file" \
		"$@" --tls-psk ""
	expect_err 2 "needs a key file of pre-shared keys: --tls-psk FILE" \
		"$@" --tls on
	expect_err 2 "needs a key file of pre-shared keys" "$@" --tls require
	expect_err 2 "key file $TMP/nosuch.psk: No such file or directory" \
		"$@" --tls-psk "$TMP/nosuch.psk"
	expect_err 2 "readable by others than its owner (mode 644): chmod 600 it" \
		"$@" --tls on --tls-psk "$TMP/open.psk"
	expect_err 2 "key file $TMP: not a regular file" "$@" --tls-psk "$TMP"
	IBTRS_TLS=sometimes expect_err 2 \
		"invalid IBTRS_TLS='sometimes' in the environment" "$@"
	IBTRS_TLS_PSK=$TMP/open.psk expect_err 2 \
		"IBTRS_TLS_PSK: key file $TMP/open.psk: readable by others" "$@"
done
for cmd in "bench ${clt[*]}" "demo --time 1"; do
	# shellcheck disable=SC2086
	set -- $cmd
	expect_err 2 "invalid --identity 'carol': no such identity in key file $TMP/keys.psk" \
		"$@" --tls-psk "$TMP/keys.psk" --identity carol
	expect_err 2 "--identity 'alice' needs a key file" "$@" --identity alice
	expect_err 2 "invalid --identity 'a:b'" "$@" --identity a:b
	IBTRS_IDENTITY=carol expect_err 2 \
		"invalid IBTRS_IDENTITY 'carol': no such identity" \
		"$@" --tls-psk "$TMP/keys.psk"
done
# The server has no --identity: it holds every key of its file.
expect_err 2 "unrecognized option '--identity'" server --identity alice

# The per-client limits.
for o in --max-sessions-per-client --max-cons-per-client \
	--max-handshakes-per-client; do
	expect_err 2 "invalid $o '0': expected 1..4294967295" server "$o" 0
	expect_err 2 "invalid $o 'x'" server "$o" x
	expect_err 2 "invalid $o '4294967296'" server "$o" 4294967296
done
expect_err 2 "invalid --handshake-timeout '0'" server --handshake-timeout 0
expect_err 2 "invalid --handshake-timeout '2h'" server --handshake-timeout 2h
expect_err 2 "invalid --handshake-timeout 'soon'" \
	server --handshake-timeout soon

# --help names every option.
run_bounded 30 "$IBTRS" server --help >"$TMP/help" || fail "server --help"
for o in --tls --tls-psk --max-sessions-per-client --max-cons-per-client \
	--max-handshakes-per-client --handshake-timeout --allow; do
	grep -q -- "$o " "$TMP/help" || fail "server --help lacks $o"
done
for c in bench demo; do
	run_bounded 30 "$IBTRS" "$c" --help >"$TMP/help" || fail "$c --help"
	for o in --tls --tls-psk --identity; do
		grep -q -- "$o " "$TMP/help" || fail "$c --help lacks $o"
	done
done

# Without keys the server says what still protects the sessions, and the
# limits in effect (the library's defaults).
start_server plain --port 0
grep -q "security: no keys: sessions protected by their own secret only" \
	"$TMP/plain.err" || fail "no security line: $(cat "$TMP/plain.err")"
grep -q "limits per client: 64 sessions, 1024 connections, 16 handshakes, handshake timeout 5000 ms" \
	"$TMP/plain.err" || fail "no limits line: $(cat "$TMP/plain.err")"
stop_server "$SRV_PID"

# With keys and limits; the server's library logs warnings, so that a
# refused handshake shows on its side too.
IBTRS_LOG_LEVEL=warn start_server keyed --port 0 --tls-psk "$TMP/keys.psk" \
	--max-sessions-per-client 8 --max-cons-per-client 100 \
	--max-handshakes-per-client 4 --handshake-timeout 2500ms
grep -q "security: tls off, 2 keys from $TMP/keys.psk" "$TMP/keyed.err" ||
	fail "no key line: $(cat "$TMP/keyed.err")"
grep -q "limits per client: 8 sessions, 100 connections, 4 handshakes, handshake timeout 2500 ms" \
	"$TMP/keyed.err" || fail "limits not taken: $(cat "$TMP/keyed.err")"

# The matching key, the file's first and one named by --identity (and by
# IBTRS_IDENTITY, with the file from IBTRS_TLS_PSK).
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" \
	--verify --time 0.5 --quiet --tls-psk "$TMP/keys.psk" \
	>"$TMP/b1.out" 2>"$TMP/b1.err" ||
	fail "bench with the server's key: $(cat "$TMP/b1.err")"
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" \
	--verify --time 0.5 --quiet --tls-psk "$TMP/keys.psk" --identity bob \
	>"$TMP/b2.out" 2>"$TMP/b2.err" ||
	fail "bench with bob's key: $(cat "$TMP/b2.err")"
IBTRS_TLS_PSK=$TMP/keys.psk IBTRS_IDENTITY=bob run_bounded 60 "$IBTRS" \
	bench --path ip:127.0.0.1 --port "$SRV_PORT" --verify --time 0.5 \
	--quiet >"$TMP/b3.out" 2>"$TMP/b3.err" ||
	fail "bench with the key from the environment: $(cat "$TMP/b3.err")"

# Another key for the same identity: refused at the handshake, with a
# message about the key, on the client and in the server's log.
run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 --port "$SRV_PORT" \
	--verify --time 0.5 --quiet --tls-psk "$TMP/other.psk" \
	--reconnect-delay 0 --max-reconnects 0 \
	>"$TMP/b4.out" 2>"$TMP/b4.err"
rc=$?
echo "bench with another key: exit $rc: $(cat "$TMP/b4.err")"
[ "$rc" -eq 1 ] || fail "bench with the wrong key: exit $rc"
grep -q "the peer refused the key" "$TMP/b4.err" ||
	fail "bench with the wrong key: no cause: $(cat "$TMP/b4.err")"
for ((i = 0; i < 50; i++)); do
	grep -q "wrong key" "$TMP/keyed.err" && break
	sleep 0.1
done
grep -q "wrong key" "$TMP/keyed.err" ||
	fail "the server did not log the wrong key: $(cat "$TMP/keyed.err")"
kill -0 "$SRV_PID" 2>/dev/null || fail "the server died"
stop_server "$SRV_PID"

# A library built without GnuTLS refuses TLS (tests/cli/tls.sh checks
# how): the rest of this test needs it.
if ! grep -q "^GNUTLS_FOUND:INTERNAL=1" "$3/CMakeCache.txt" 2>/dev/null; then
	echo "note: built without GnuTLS: the TLS part is not run"
	echo "ok"
	exit 0
fi
# tls require (on tcp, whatever IBTRS_BACKEND says: TLS is tcp's): the
# server says so; the matching key passes, another key for the same
# identity is refused with a message about the key, and a plaintext
# client with one about TLS.
IBTRS_BACKEND=tcp start_server req --port 0 --tls require \
	--tls-psk "$TMP/keys.psk"
grep -q "security: tls require, 2 keys from $TMP/keys.psk" "$TMP/req.err" ||
	fail "no tls line: $(cat "$TMP/req.err")"
tbench() {
	local name=$1
	shift
	IBTRS_BACKEND=tcp run_bounded 60 "$IBTRS" bench --path ip:127.0.0.1 \
		--port "$SRV_PORT" --verify --time 0.5 --quiet \
		--reconnect-delay 0 --max-reconnects 0 "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err"
}
tbench plain --tls-psk "$TMP/keys.psk" &&
	fail "a plaintext client was served by a TLS-only server"
grep -q "does the server require TLS" "$TMP/plain.err" ||
	fail "plaintext to a TLS server: $(cat "$TMP/plain.err")"
tbench tlsok --tls on --tls-psk "$TMP/keys.psk" ||
	fail "TLS with the server's key: $(cat "$TMP/tlsok.err")"
tbench tlsbad --tls require --tls-psk "$TMP/other.psk" &&
	fail "TLS with another key was served"
grep -q "the peer refused the key" "$TMP/tlsbad.err" ||
	fail "TLS with another key: $(cat "$TMP/tlsbad.err")"
echo "TLS: the wrong key and plaintext are refused, each with its cause"
kill -0 "$SRV_PID" 2>/dev/null || fail "the TLS server died"
stop_server "$SRV_PID"
# The demo hands the file to both of its ends and says which key it uses.
run_bounded 60 "$IBTRS" demo --time 1 --tls-psk "$TMP/keys.psk" \
	--identity bob >"$TMP/demo.out" 2>"$TMP/demo.err" ||
	fail "demo with keys: $(cat "$TMP/demo.err")"
grep -q "security tls off, key 'bob' from $TMP/keys.psk" "$TMP/demo.out" ||
	fail "demo header: $(head -12 "$TMP/demo.out")"
echo "ok"
exit 0
