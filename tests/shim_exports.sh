#!/bin/bash
# shim_exports.sh: what libmemtrace.so asks of the dynamic loader and offers
# to the program.  It needs the C library alone (libc, libdl, the loader), and
# exports none of libgcc's unwinder, which configure links into it: an
# exported _Unwind_RaiseException or __register_frame_info would take the
# preloaded shim's copy over the program's own libgcc_s for its C++
# exceptions.  Output: TAP.  Needs MEMTRACE_SO.
set -u

: "${MEMTRACE_SO:?MEMTRACE_SO is not set}"
if [ ! -f "$MEMTRACE_SO" ]; then
	echo "1..0 # SKIP $MEMTRACE_SO not built"
	exit 0
fi
if ! command -v readelf >/dev/null 2>&1; then
	echo "1..0 # SKIP no readelf (binutils)"
	exit 0
fi
echo "1..2"
fail=0

needed=$(LC_ALL=C readelf -d -W "$MEMTRACE_SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
other=$(printf '%s\n' "$needed" | grep -Ev '^(libc\.so\.6|libdl\.so\.2|ld-linux[-a-z0-9_.]*\.so\.[0-9]+)$')
if [ -z "$other" ]; then
	echo "ok 1 - needs only the C library: $(echo $needed)"
else
	echo "not ok 1 - needs more than the C library: $(echo $other)"
	fail=1
fi

# defined (not UND) dynamic symbols of libgcc's unwinder and EH runtime
leaked=$(LC_ALL=C readelf --dyn-syms -W "$MEMTRACE_SO" |
	awk '$7 != "UND" && $8 ~ /^(_Unwind_|__register_frame|__deregister_frame|__gcc_personality|__frame_state_for|_dl_find_object)/ { print $8 }')
if [ -z "$leaked" ]; then
	echo "ok 2 - exports nothing of libgcc's unwinder"
else
	echo "not ok 2 - exports libgcc's unwinder: $(echo $leaked)"
	fail=1
fi
exit "$fail"
