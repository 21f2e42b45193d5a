#!/usr/bin/env bash
# setup.sh: make this checkout ready to use.  Installs the Debian packages the
# build and the tests need when they are missing, then configures (once) and
# builds.  Safe to run again: each step is skipped when already done.
#
#   MEMTRACE_CONFIGURE_FLAGS   extra ./configure arguments (first configure only)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# Build: autotools + Criterion.  Tests: the real programs run under the shim
# (python3, perl, git, make, gcc are on Debian's build images; listed anyway),
# valgrind for the memcheck runs over memsup, clang and its libFuzzer runtime
# (libclang_rt.fuzzer: libclang-rt-14-dev on Debian 12) for scripts/fuzz.sh;
# threaded real programs and another allocator for the shim's thread tests
# (xz, zstd, pigz, jemalloc); the allocators that take locks of their own
# at fork, preloaded and linked (jemalloc with its -dev package, tcmalloc,
# mimalloc: tests/shim_fork_allocators.sh); groff for the man pages' lint (tests/man_lint.sh);
# tmux and less for memsup at a real terminal (tests/terminal.sh); binutils
# (addr2line, objcopy) for the call sites' file:line, libc6-dbg for a libc
# frame named through its build-id debug file, g++ for a C++ name demangled
# (tests/e2e/test_memsup_lines.c); Slurm 22.05 and munge for a one-node
# cluster of the test's own (tests/slurm.sh runs daemons of its own, with
# their own configuration, whatever the packages' services do); nodejs for
# JavaScript frames named from node's perf map (test_memsup_perfmap.c);
# libxml2-utils (xmllint) to validate memsup diff's JUnit XML against its
# schemas (tests/junit_schema.sh); python3-numpy for Python frames through
# a C extension (test_memsup_pyframes.c).
packages=(gcc make autoconf automake libtool pkg-config libcriterion-dev
          python3 perl git valgrind clang libclang-rt-14-dev
          xz-utils zstd pigz libjemalloc2 libjemalloc-dev libtcmalloc-minimal4
          libmimalloc2.0 groff-base tmux less
          binutils libc6-dbg g++ slurmctld slurmd slurm-client munge nodejs
          libxml2-utils python3-numpy)
missing=()
for pkg in "${packages[@]}"; do
	dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q '^install ok installed$' \
		|| missing+=("$pkg")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}" >&2
	sudo=()
	[ "$(id -u)" -eq 0 ] || sudo=(sudo)
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >&2
fi

if [ ! -x configure ]; then
	echo "setup: autoreconf -fi" >&2
	autoreconf -fi >&2
fi
if [ ! -f Makefile ]; then
	echo "setup: ./configure ${MEMTRACE_CONFIGURE_FLAGS:-}" >&2
	# shellcheck disable=SC2086 # word splitting of the flags is wanted
	./configure --quiet ${MEMTRACE_CONFIGURE_FLAGS:-} >&2
fi
make -j"$(nproc)" >&2
