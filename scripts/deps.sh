#!/usr/bin/env bash
# Install the Debian packages the build and the tests need, when missing.
# Sourced by scripts/demo.sh and scripts/test.sh.
ibtrs_need_pkgs() {
	local missing=() pkg
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
			grep -q "install ok installed" || missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "missing packages: ${missing[*]} (run as root, or install them)" >&2
		return 1
	fi
	echo "installing: ${missing[*]}"
	if [ ! -d /var/lib/apt/lists ] || [ -z "$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v lock)" ] ||
		! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
		apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends "${missing[@]}" >/dev/null
	fi
}

IBTRS_BUILD_PKGS=(gcc make cmake pkg-config libc6-dev liburing-dev nettle-dev libgnutls28-dev)
IBTRS_TEST_PKGS=(python3 iproute2 nftables clang-format groff-base man-db g++ libfabric-dev nbdkit nbdkit-plugin-dev libnbd-bin qemu-utils fio fuse3 python3-libnbd e2fsprogs util-linux mount clang libclang-rt-14-dev gnutls-bin)
