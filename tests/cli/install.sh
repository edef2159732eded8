#!/bin/bash
# SPDX-License-Identifier: MIT
# install.sh - "cmake --install" into a temporary prefix gives a usable
# tree: header, shared library with its SONAME link, pkg-config file, tool
# and man pages; an application built with pkg-config against it runs
# (tests/install/consumer.c); the header compiles as C++; the library
# exports only ibtrs_* symbols.
# Args: $1 ibtrs binary, $2 source dir, $3 build dir.

. "$(dirname "$0")/common.bash"

SRC=${2:?usage: $0 IBTRS_BINARY SOURCE_DIR BUILD_DIR}
BUILD=${3:?usage: $0 IBTRS_BINARY SOURCE_DIR BUILD_DIR}
failures=0

# A failed check that lets the others run; the test fails at the end.
bad() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

warn() {
	echo "WARNING: $*" >&2
}

command -v pkg-config >/dev/null || skip "pkg-config is missing"
command -v cc >/dev/null || skip "no C compiler (cc)"
command -v cmake >/dev/null || skip "cmake is missing"

prefix=$TMP/prefix
run_bounded 120 cmake --install "$BUILD" --prefix "$prefix" \
	>"$TMP/install.log" 2>&1 || {
	cat "$TMP/install.log" >&2
	fail "cmake --install failed"
}

# --- the installed tree -------------------------------------------------

[ -f "$prefix/include/ibtrs.h" ] || bad "include/ibtrs.h is not installed"
cmp -s "$prefix/include/ibtrs.h" "$SRC/include/ibtrs.h" ||
	bad "the installed ibtrs.h differs from include/ibtrs.h"
[ -f "$prefix/include/ibtrs_fault.h" ] ||
	bad "include/ibtrs_fault.h is not installed"
cmp -s "$prefix/include/ibtrs_fault.h" "$SRC/include/ibtrs_fault.h" ||
	bad "the installed ibtrs_fault.h differs from include/ibtrs_fault.h"

libdir=
for d in "$prefix"/lib*; do
	if [ -e "$d/libibtrs.so" ] || compgen -G "$d/libibtrs.so.*" >/dev/null; then
		libdir=$d
		break
	fi
done
[ -n "$libdir" ] || fail "no libibtrs.so under $prefix/lib*"
echo "library directory: $libdir"

real=
for f in "$libdir"/libibtrs.so.*; do
	[ -f "$f" ] && [ ! -L "$f" ] && real=$f
done
[ -n "$real" ] || fail "no real libibtrs.so.X.Y.Z file in $libdir"
soname=$(objdump -p "$real" 2>/dev/null | sed -n 's/^ *SONAME *//p')
[ -n "$soname" ] || bad "$(basename "$real") has no SONAME"
if [ -n "$soname" ]; then
	[ -L "$libdir/$soname" ] ||
		bad "no SONAME symlink $soname in $libdir"
	[ "$(readlink -f "$libdir/$soname")" = "$(readlink -f "$real")" ] ||
		bad "$soname does not point at $(basename "$real")"
fi
[ -L "$libdir/libibtrs.so" ] ||
	bad "no development symlink libibtrs.so in $libdir"
[ "$(readlink -f "$libdir/libibtrs.so")" = "$(readlink -f "$real")" ] ||
	bad "libibtrs.so does not point at $(basename "$real")"

pkgdir=
for d in "$prefix"/lib*/pkgconfig; do
	[ -f "$d/libibtrs.pc" ] && pkgdir=$d
done
[ -n "$pkgdir" ] || fail "libibtrs.pc is not installed under lib*/pkgconfig"

[ -x "$prefix/bin/ibtrs" ] || bad "bin/ibtrs is not installed"
# The installed tool starts from its prefix as it is, with no
# LD_LIBRARY_PATH: its RPATH leads it to the library installed beside it.
if [ -x "$prefix/bin/ibtrs" ]; then
	run_bounded 30 env -u LD_LIBRARY_PATH "$prefix/bin/ibtrs" --version \
		>"$TMP/version.out" 2>&1 </dev/null ||
		bad "the installed ibtrs --version fails without LD_LIBRARY_PATH: $(cat "$TMP/version.out")"
	grep -q . "$TMP/version.out" || bad "the installed ibtrs --version printed nothing"
	lib_used=$(env -u LD_LIBRARY_PATH ldd "$prefix/bin/ibtrs" 2>/dev/null |
		sed -n 's/^[[:space:]]*libibtrs[^ ]* => \([^ ]*\).*/\1/p')
	# The RPATH names it as bin/../lib: compare the directories.
	case $(cd "$(dirname "${lib_used:-/nonexistent/x}")" 2>/dev/null && pwd -P) in
	"$(cd "$libdir" && pwd -P)") ;;
	*) bad "the installed ibtrs does not load the installed library (${lib_used:-none found})" ;;
	esac
fi

for sec in 1 3 7; do
	src_pages=$(cd "$SRC/man" 2>/dev/null && ls -- *."$sec" 2>/dev/null)
	if [ -z "$src_pages" ]; then
		warn "no man$sec pages in the source tree (man/*.$sec) yet"
		continue
	fi
	for page in $src_pages; do
		[ -f "$prefix/share/man/man$sec/$page" ] ||
			bad "man page $page is not installed in share/man/man$sec"
	done
done

# The installed pages do not send the reader to files that are not
# installed (the source tree's headers) as if they were, and say what every
# program gets by default: a control socket and a thread, and how not to.
m7=$prefix/share/man/man7/ibtrs.7
if [ -f "$m7" ]; then
	grep -n 'src/core/' "$m7" && bad "ibtrs(7) cites a source file"
	tr '\n' ' ' <"$m7" | grep -o 'docs/[a-z]*\.md.\{0,120\}' |
		grep -v 'installed' &&
		bad "ibtrs(7) cites docs/ without saying it is not installed"
	grep -q 'gets a UNIX socket and one thread more' "$m7" ||
		bad "ibtrs(7) does not say every program gets a control socket and a thread"
fi

# --- exported symbols ----------------------------------------------------

if command -v nm >/dev/null; then
	nm -D --defined-only "$real" >"$TMP/nm.out" ||
		bad "nm -D failed on $real"
	# Type A: the version node (IBTRS_0.1), not a symbol of the API.
	others=$(awk '$2 != "A" && $3 !~ /^ibtrs_/ { print $3 }' "$TMP/nm.out")
	[ -z "$others" ] ||
		bad "the library exports symbols outside ibtrs_*: $(echo $others)"
	# Every function the header declares is exported.
	for h in ibtrs.h ibtrs_fault.h; do
		for fn in $(grep -oE '\bibtrs_[a-z0-9_]+\(' "$SRC/include/$h" |
			tr -d '(' | sort -u); do
			awk -v f="$fn" '$3 == f || $3 ~ "^" f "@" { ok = 1 } END { exit !ok }' \
				"$TMP/nm.out" || bad "$fn is declared in $h but not exported"
		done
	done
	# The fault API in its own node, and still where it was for binaries
	# linked against 0.1.
	grep -q ' ibtrs_clt_inject_fault@@IBTRS_FAULT_1$' "$TMP/nm.out" ||
		bad "ibtrs_clt_inject_fault is not the default of IBTRS_FAULT_1"
	grep -q ' ibtrs_clt_inject_fault@IBTRS_0.1$' "$TMP/nm.out" ||
		bad "ibtrs_clt_inject_fault@IBTRS_0.1 is gone"
else
	warn "nm is missing: exported symbols not checked"
fi

# --- the block layer: libibnbd and the nbdkit plugin ---------------------

[ -f "$prefix/include/ibnbd.h" ] || bad "include/ibnbd.h is not installed"
cmp -s "$prefix/include/ibnbd.h" "$SRC/include/ibnbd.h" ||
	bad "the installed ibnbd.h differs from include/ibnbd.h"
compgen -G "$libdir/libibnbd.so.*" >/dev/null ||
	bad "no libibnbd.so.* in $libdir"
[ -f "$pkgdir/libibnbd.pc" ] || bad "libibnbd.pc is not installed in $pkgdir"
PKG_CONFIG_PATH=$pkgdir pkg-config --exists libibnbd ||
	bad "pkg-config does not find libibnbd (or its libibtrs) in $pkgdir"
if grep -q '^NBDKIT_FOUND:INTERNAL=1' "$BUILD/CMakeCache.txt" 2>/dev/null; then
	plugin=$(find "$prefix" -name nbdkit-ibtrs-plugin.so -path '*/nbdkit/plugins/*' | head -n 1)
	if [ -z "$plugin" ]; then
		bad "nbdkit-ibtrs-plugin.so is not installed under */nbdkit/plugins"
	else
		# The plugin finds libibnbd and libibtrs in the prefix, by its
		# RPATH, with no LD_LIBRARY_PATH.
		for lib in libibnbd libibtrs; do
			used=$( (unset LD_LIBRARY_PATH; ldd "$plugin") 2>/dev/null |
				sed -n "s/^[[:space:]]*$lib[^ ]* => \([^ ]*\).*/\1/p")
			case $used in
			"$libdir"/*) ;;
			*) bad "the installed plugin does not load the installed $lib ($used)" ;;
			esac
		done
		# nbdkit is not built with the sanitizers: it loads an
		# instrumented plugin only with their runtime preloaded.
		if command -v nbdkit >/dev/null &&
			! grep -q '^IBTRS_SANITIZE:STRING=.' "$BUILD/CMakeCache.txt"; then
			(unset LD_LIBRARY_PATH
			run_bounded 30 nbdkit --dump-plugin "$plugin") \
				>"$TMP/dump.out" 2>&1 ||
				bad "nbdkit cannot load the installed plugin: $(head -n 3 "$TMP/dump.out")"
			grep -qx 'name=ibtrs' "$TMP/dump.out" ||
				bad "the installed plugin does not say name=ibtrs"
		fi
	fi
fi

# --- pkg-config and an application built against the tree ----------------

pc() {
	PKG_CONFIG_PATH=$pkgdir pkg-config "$@" libibtrs
}

pc --exists || bad "pkg-config does not find libibtrs in $pkgdir"
pc_prefix=$(pc --variable=prefix)
# The .pc file may name its prefix relative to itself (${pcfiledir}).
pc_prefix_real=$(cd "$pc_prefix" 2>/dev/null && pwd -P)
define=()
if [ "$pc_prefix_real" != "$(cd "$prefix" && pwd -P)" ]; then
	bad "libibtrs.pc says prefix=$pc_prefix, not the install prefix $prefix (the .pc file is not relocated by 'cmake --install --prefix')"
	# Go on with the prefix corrected, to check the rest.
	define=(--define-variable=prefix="$prefix")
fi
flags=$(pc "${define[@]}" --cflags --libs) || bad "pkg-config --cflags --libs failed"
echo "pkg-config: $flags"

# An instrumented library needs its sanitizer runtime in the application.
san=$(sed -n 's/^IBTRS_SANITIZE:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
sanflags=()
[ -n "$san" ] && sanflags=(-fsanitize="$san")

# shellcheck disable=SC2086 # $flags is a list of options
if ! cc -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Werror "${sanflags[@]}" -o "$TMP/consumer" \
	"$SRC/tests/install/consumer.c" $flags -lpthread \
	>"$TMP/cc.log" 2>&1; then
	cat "$TMP/cc.log" >&2
	bad "consumer.c does not build with the installed tree"
else
	lib_used=$(LD_LIBRARY_PATH=$libdir ldd "$TMP/consumer" |
		sed -n 's/^[[:space:]]*libibtrs[^ ]* => \([^ ]*\).*/\1/p')
	case $lib_used in
	"$libdir"/*) ;;
	*) bad "the consumer does not load the installed library ($lib_used)" ;;
	esac
	# Port 0: the consumer takes a port the system picks (and picks
	# again should another process take it first).
	LD_LIBRARY_PATH=$libdir run_bounded 120 "$TMP/consumer" 0 \
		>"$TMP/consumer.out" 2>"$TMP/consumer.err"
	rc=$?
	cat "$TMP/consumer.out"
	sed 's/^/consumer stderr: /' "$TMP/consumer.err"
	[ "$rc" -eq 0 ] || bad "the consumer exited with $rc"
	grep -qx 'consumer: ok' "$TMP/consumer.out" ||
		bad "the consumer did not print 'consumer: ok'"
fi

# The README's example of the API builds against the installed tree as it
# is written there.
sed -n '/^## The API in a page$/,/^```$/p' "$SRC/README.md" |
	sed '1,/^```c$/d; /^```$/d' >"$TMP/readme.c"
[ -s "$TMP/readme.c" ] || bad "no C example under 'The API in a page' in README.md"
# shellcheck disable=SC2086
cc -Wall -Wextra -Werror "${sanflags[@]}" -o "$TMP/readme" "$TMP/readme.c" \
	$flags -lpthread >"$TMP/readme.log" 2>&1 || {
	cat "$TMP/readme.log" >&2
	bad "the README's example does not build"
}

if command -v g++ >/dev/null; then
	# shellcheck disable=SC2086
	g++ -fsyntax-only -Wall -Wextra -Werror \
		$(pc "${define[@]}" --cflags) "$SRC/tests/install/consumer.cpp" \
		>"$TMP/cxx.log" 2>&1 || {
		cat "$TMP/cxx.log" >&2
		bad "ibtrs.h does not compile as C++"
	}
else
	warn "g++ is missing: the C++ check is skipped"
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed" >&2
	exit 1
fi
echo PASS
exit 0
