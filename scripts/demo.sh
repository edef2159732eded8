#!/usr/bin/env bash
# Build ibtrs and run the live demo on this machine: a server and a client
# session over two loopback paths, verified I/O, figures once per second.
# Extra arguments go to `ibtrs demo` (e.g. --time 30). The run's picture
# (IOPS per path, p99 latency, the cut and the return of path 1) lands in
# build/demo.svg; open it in a browser.
# IBTRS_TLS=on (or require) runs it over TLS 1.3 with a pre-shared key:
# IBTRS_TLS_PSK names the key file, else a fresh one is made in
# build/demo.psk (mode 0600).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
ibtrs_need_pkgs "${IBTRS_BUILD_PKGS[@]}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
if [ "${IBTRS_TLS:-off}" != off ] && [ -z "${IBTRS_TLS_PSK:-}" ]; then
	rm -f build/demo.psk
	(umask 077 && printf 'demo:%s\n' \
		"$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')" >build/demo.psk)
	export IBTRS_TLS_PSK=build/demo.psk
fi
exec ./build/ibtrs demo --plot build/demo.svg "$@"
