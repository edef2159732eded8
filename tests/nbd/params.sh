#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The nbdkit plugin's parameters: --help lists them all; each bad one, a
# server that is not there, an unknown export and a second rw open of an
# export (the server's one-rw-open rule) give a clear error and a failing
# nbdkit; the good ones are accepted and serve. The ibtrs side's keys
# (ibtrs-tls=, ibtrs-tls-psk=, ibtrs-identity=): bad ones are refused with
# their cause, good ones reach a server that holds the keys (and, where
# the library has TLS, one that requires it).
. "$(dirname "$0")/lib.bash"

need_plugin
need nbdinfo timeout

"${NBDKIT_ENV[@]}" nbdkit "$PLUGIN" --help >"$TMP/help" 2>&1 || fail "nbdkit --help: exit $?"
for p in path= export= port= sessname= readonly= policy= reconnect-delay= \
	hb-timeout= queue-timeout= transport= failover-timeout= \
	connect-timeout= io-cons= max-reconnect-attempts= ibtrs-tls= \
	ibtrs-tls-psk= ibtrs-identity=; do
	grep -q "^$p" "$TMP/help" || fail "--help does not list $p"
done
echo "--help lists every parameter"

# bad EXPECTED_MESSAGE ARGS...: nbdkit fails, and says EXPECTED_MESSAGE.
bad() {
	local want=$1 rc
	shift
	rm -f "$TMP/bad.sock"
	if [ -z "$san" ]; then
		timeout -k 1 60 "${NBDKIT_ENV[@]}" nbdkit -f \
			-U "$TMP/bad.sock" "$PLUGIN" "$@" >"$TMP/bad.out" 2>&1 </dev/null
		rc=$?
	else
		# Under a sanitizer runtime nbdkit may hang in exit() after
		# its error (lib.bash): once the error is out, it is stopped.
		# nbdkit itself is the background job (no timeout(1)
		# between), so that the kill reaches it; bounded to 60 s.
		local pid i
		# Emptied here: the job's own redirection may come after
		# the first look below.
		: >"$TMP/bad.out"
		"${NBDKIT_ENV[@]}" nbdkit -f -U "$TMP/bad.sock" "$PLUGIN" \
			"$@" >"$TMP/bad.out" 2>&1 </dev/null &
		pid=$!
		for ((i = 0; i < 600; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			# The error, up to its end of line.
			grep -q 'error:' "$TMP/bad.out" &&
				[ -z "$(tail -c 1 "$TMP/bad.out")" ] && break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			# Killed in the exit() hang after its error: a failure.
			rc=124
			grep -q 'error:' "$TMP/bad.out" && rc=1
		else
			wait "$pid"
			rc=$?
		fi
	fi
	[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] ||
		fail "nbdkit $*: exit $rc, expected a failure"
	grep -q -- "$want" "$TMP/bad.out" || {
		cat "$TMP/bad.out"
		fail "nbdkit $*: no '$want' in the error"
	}
	echo "nbdkit ${*}: $(grep -m1 -- "$want" "$TMP/bad.out")"
}
bad "no path= given" export=disk
bad "no export= given" path=ip:127.0.0.1
bad "path=ip::: malformed address" path=ip:: export=disk
bad "path=nonsense: malformed" path=nonsense export=disk
bad "policy=fastest: expected round-robin" path=ip:127.0.0.1 export=disk \
	policy=fastest
bad "transport=udp: expected tcp or ofi" path=ip:127.0.0.1 export=disk \
	transport=udp
bad "hb-timeout=50: at least 100 ms" path=ip:127.0.0.1 export=disk \
	hb-timeout=50
bad "io-cons=9: must be 1..8" path=ip:127.0.0.1 export=disk io-cons=9
bad "port=0: must be 1..65535" path=ip:127.0.0.1 export=disk port=0
bad "port" path=ip:127.0.0.1 export=disk port=70000
bad "queue-timeout" path=ip:127.0.0.1 export=disk queue-timeout=soon
bad "readonly" path=ip:127.0.0.1 export=disk readonly=maybe
bad "export=a/b: an export name" path=ip:127.0.0.1 export=a/b
bad "sessname=x/y: a session name" path=ip:127.0.0.1 export=disk \
	sessname=x/y
bad "unknown parameter 'colour'" path=ip:127.0.0.1 export=disk colour=red
args=()
for i in $(seq 17); do args+=("path=ip:127.0.0.$i"); done
bad "at most 16 paths" "${args[@]}" export=disk

# Keys of the ibtrs side, in psktool's format.
for id in alice bob; do
	printf '%s:%s\n' "$id" "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
done >"$TMP/keys.psk"
chmod 600 "$TMP/keys.psk"
cp "$TMP/keys.psk" "$TMP/open.psk" || fail "cp"
chmod 644 "$TMP/open.psk" || fail "chmod"
bad "ibtrs-tls=maybe: expected off, on or require" path=ip:127.0.0.1 \
	export=disk ibtrs-tls=maybe
bad "ibtrs-tls=on needs a key file: ibtrs-tls-psk=FILE" path=ip:127.0.0.1 \
	export=disk ibtrs-tls=on
bad "ibtrs-identity=alice needs a key file" path=ip:127.0.0.1 export=disk \
	ibtrs-identity=alice
bad "ibtrs-identity=a:b: expected the identity" path=ip:127.0.0.1 \
	export=disk ibtrs-identity=a:b ibtrs-tls-psk="$TMP/keys.psk"
bad "$TMP/nosuch.psk" path=ip:127.0.0.1 export=disk \
	ibtrs-tls-psk="$TMP/nosuch.psk"
bad "readable by others than its owner (mode 644): chmod 600 it" \
	path=ip:127.0.0.1 export=disk ibtrs-tls-psk="$TMP/open.psk"

truncate -s 16M "$TMP/disk.img"
truncate -s 16M "$TMP/ro.img"
start_server srv --export "disk=$TMP/disk.img" --export-ro "ro=$TMP/ro.img"
bad "no such export" path=ip:127.0.0.1 port="$SRV_PORT" export=nothere
bad "ibtrs session" path=ip:127.0.0.1 port=1 export=disk \
	connect-timeout=1000

# Every parameter at once, the magic key (a bare path) included.
start_nbdkit all "$TMP/all.sock" ip:127.0.0.1 path=ip:127.0.0.2 \
	port="$SRV_PORT" export=disk sessname=params-test policy=round-robin \
	reconnect-delay=1 max-reconnect-attempts=-1 hb-timeout=2000 \
	connect-timeout=3000 failover-timeout=20000 queue-timeout=5000 \
	io-cons=2 transport=tcp
[ "$(nbdinfo --size "$(uri "$TMP/all.sock")")" -eq $((16 << 20)) ] ||
	fail "wrong size"
grep -q 'session params-test: 2 path' "$TMP/all.log" ||
	fail "sessname= or the paths were not used"
# The one-rw-open rule: a second plugin asking rw is refused, clearly.
bad "another client has it open read-write" path=ip:127.0.0.1 \
	port="$SRV_PORT" export=disk
stop_nbdkit all "$NBDKIT_PID"
echo "all parameters accepted; a second rw open is refused"

# A read-only export: rw is refused with a hint, readonly=true serves.
bad "readonly=true or -r" path=ip:127.0.0.1 port="$SRV_PORT" export=ro
start_nbdkit ro "$TMP/ro.sock" path=ip:127.0.0.1 port="$SRV_PORT" \
	export=ro readonly=1
nbdinfo --json "$(uri "$TMP/ro.sock")" | grep -q '"is_read_only": true' ||
	fail "readonly=1 is not read only"
stop_nbdkit ro "$NBDKIT_PID"

# The ibtrs side with a key: an identity not in the file is refused with
# the library's cause; bob's key reaches a server holding the file.
stop_server_quiet() {
	kill -TERM "$SRV_PID" 2>/dev/null
	wait_for 20 bash -c "! kill -0 $SRV_PID" || fail "server $SRV_PID hangs"
}
stop_server_quiet
start_server keyed --tls-psk "$TMP/keys.psk" --export "disk=$TMP/disk.img"
bad "identity carol is not in key file" path=ip:127.0.0.1 \
	port="$SRV_PORT" export=disk ibtrs-tls-psk="$TMP/keys.psk" \
	ibtrs-identity=carol
start_nbdkit keyed "$TMP/keyed.sock" path=ip:127.0.0.1 port="$SRV_PORT" \
	export=disk ibtrs-tls-psk="$TMP/keys.psk" ibtrs-identity=bob
[ "$(nbdinfo --size "$(uri "$TMP/keyed.sock")")" -eq $((16 << 20)) ] ||
	fail "wrong size through a keyed session"
stop_nbdkit keyed "$NBDKIT_PID"
stop_server_quiet
echo "a key of the ibtrs side reaches a server holding it"

# TLS required by the server, where the library has it (a library
# without GnuTLS refuses the mode at once and says so).
timeout -k 1 10 "$IBTRS" server --port 0 --quiet --tls require \
	--tls-psk "$TMP/keys.psk" >"$TMP/tlsprobe.out" 2>&1 &
probe=$!
wait_for 10 grep -q "listening on port" "$TMP/tlsprobe.out"
kill -TERM "$probe" 2>/dev/null
wait "$probe" 2>/dev/null
if grep -q "listening on port" "$TMP/tlsprobe.out"; then
	start_server tls --tls require --tls-psk "$TMP/keys.psk" \
		--export "disk=$TMP/disk.img"
	start_nbdkit tls "$TMP/tls.sock" path=ip:127.0.0.1 \
		port="$SRV_PORT" export=disk ibtrs-tls=require \
		ibtrs-tls-psk="$TMP/keys.psk"
	[ "$(nbdinfo --size "$(uri "$TMP/tls.sock")")" -eq $((16 << 20)) ] ||
		fail "wrong size through TLS"
	stop_nbdkit tls "$NBDKIT_PID"
	stop_server_quiet
	echo "ibtrs-tls=require reaches a server that requires TLS"
else
	echo "note: no TLS in this library: $(cat "$TMP/tlsprobe.out")"
fi
echo "PASS"
