#!/usr/bin/env bash
# Build ibtrs and run the live demo on this machine: a server and a client
# session over two loopback paths, verified I/O, figures once per second.
# Extra arguments go to `ibtrs demo` (e.g. --time 30). The run's picture
# (IOPS per path, p99 latency, the cut and the return of path 1) lands in
# build/demo.svg; open it in a browser.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/deps.sh
ibtrs_need_pkgs "${IBTRS_BUILD_PKGS[@]}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec ./build/ibtrs demo --plot build/demo.svg "$@"
