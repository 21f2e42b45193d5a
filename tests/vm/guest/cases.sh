#!/bin/bash
# cases.sh: memsup's real-kernel cases, run inside the VM of tests/vm/run.sh
# as root by mtvm-cases.service (a oneshot: this shell and memsup share the
# service's cgroup, which is the "root in a shared cgroup" case).
#
# Every line for the host starts with "MTVM: " (the serial console also
# carries the kernel's and systemd's lines): first the facts of the boot as
# "# " comments (cgroup layout, the service's cgroup, what user@1001
# delegates, the managers' sockets), then one TAP line per case with what it
# saw as comments, then the plan.  Each case runs alone (`cases.sh --case
# NAME`) under a timeout, in a directory of its own.  The cases assert what
# memsup should do, not what it does today.
#
# /etc/mtvm/cases: an extended regex of the cases to run (empty: all).
# The boot's name (v1, v2) is memsup_vm.boot= on the kernel command line.
set -u
export PATH=/usr/local/bin:/usr/local/sbin:/usr/bin:/usr/sbin:/bin:/sbin
P=/opt/memtrace/progs
HERE=/opt/memtrace/vm
M='MTVM: '
ALICE=1001 BOB=1002

boot=$(sed -n 's/.*memsup_vm\.boot=\([^ ]*\).*/\1/p' /proc/cmdline)
case_timeout=240

# --- helpers for the cases -------------------------------------------------
fail() { echo "FAILED: $*"; exit 1; }
# run_memsup OUTVAR_PREFIX CMD...: runs CMD (a memsup command line, maybe
# behind runuser/unshare), keeps its status in $rc, its stderr in $err
# (a file); prints memsup's stderr lines.
run_cmd() {
	err=$(mktemp /tmp/mtvm-err.XXXXXX)
	local t=$SECONDS
	"$@" >/dev/null 2>"$err" </dev/null
	rc=$?
	echo "ran: $* -> exit $rc in $((SECONDS - t)) s"
	grep -a '^memsup' "$err" | head -20 | cut -c1-300
}
# rcheck DIR EXPR...: the Python expressions hold on DIR/resources.json
# (r: the record, c: its containment)
rcheck() { python3 "$HERE/rcheck.py" "$@"; }
# evidence DIR OWNER: a fresh evidence directory's parent, writable by OWNER
evdir() {
	local d
	d=$(mktemp -d /tmp/mtvm.XXXXXX) || exit 1
	chmod 755 "$d"
	[ -n "${1:-}" ] && chown "$1" "$d"
	echo "$d/ev"
}
polled="r['peak_source'] in ('polled_pss', 'polled_rss')"
cgroup="r['peak_source'] == 'cgroup'"
# steady 200 holds 200 MB (decimal) plus the program (about 1 MB, rounded
# up to 2 MiB by steady.c's own account): memsup reports 202.4 MB for it on
# a Debian 12 host, 204.4 MB in this VM from a scope.  3% of 200 either way,
# and the 2 MB of program above.
near200="194 <= r['peak_mb'] <= 208"

wait_user_manager() { # uid
	for _ in $(seq 1 120); do
		systemctl is-active --quiet "user@$1.service" && return 0
		sleep 1
	done
	echo "user@$1.service not active after 120 s: $(systemctl is-active user@"$1".service)"
	return 1
}

# --- the cases -------------------------------------------------------------
case_layout() { # the boot is the layout it was asked for
	local fs
	fs=$(stat -fc %T /sys/fs/cgroup)
	echo "/sys/fs/cgroup is $fs"
	case $boot in
	v2) [ "$fs" = cgroup2fs ] || fail "v2 boot: /sys/fs/cgroup is $fs, not cgroup2fs" ;;
	v1)
		[ "$fs" = tmpfs ] || fail "v1 boot: /sys/fs/cgroup is $fs, not tmpfs"
		[ "$(stat -fc %T /sys/fs/cgroup/memory)" = cgroupfs ] || fail "no v1 memory hierarchy"
		[ ! -e /sys/fs/cgroup/unified ] || fail "v1 boot has /sys/fs/cgroup/unified (hybrid, not v1 only)"
		;;
	*) fail "unknown boot '$boot'" ;;
	esac
}

case_root_shared_cgroup() {
	local d
	d=$(evdir)
	echo "own cgroup: $(tr '\n' ' ' </proc/self/cgroup)"
	run_cmd memsup -o "$d" -- "$P/steady" 200 1500
	[ "$rc" -eq 0 ] || fail "memsup exited $rc"
	rcheck "$d" "$cgroup" "$near200"
}

case_root_scope() {
	local d
	d=$(evdir)
	run_cmd systemd-run --scope --quiet memsup -o "$d" -- "$P/steady" 200 1500
	[ "$rc" -eq 0 ] || fail "systemd-run memsup exited $rc"
	rcheck "$d" "$cgroup" "$near200"
}

user_run() { # XDG (yes/no) -> memsup as alice, a lingering user
	local d
	wait_user_manager $ALICE || exit 1
	d=$(evdir alice)
	if [ "$1" = yes ]; then
		run_cmd runuser -u alice -- env XDG_RUNTIME_DIR=/run/user/$ALICE \
			memsup -o "$d" -- "$P/steady" 200 1500
	else
		run_cmd runuser -u alice -- env -u XDG_RUNTIME_DIR -u DBUS_SESSION_BUS_ADDRESS \
			memsup -o "$d" -- "$P/steady" 200 1500
	fi
	[ "$rc" -eq 0 ] || fail "memsup as alice exited $rc"
	if [ "$boot" = v1 ]; then # no delegation on v1: the fallback, and why
		rcheck "$d" "$polled" || exit 1
		grep -aiq '^memsup:.*cgroup' "$err" || fail "no 'memsup: ...cgroup...' line on stderr"
	else
		rcheck "$d" "$cgroup" "$near200"
	fi
}
case_user_lingering() { user_run yes; }
case_user_lingering_no_xdg() { user_run no; }

case_user_no_manager() { # bob: no linger, no session, no user manager
	local d
	d=$(evdir bob)
	systemctl is-active --quiet user@$BOB.service && echo "note: user@$BOB.service is active"
	run_cmd runuser -u bob -- env -u XDG_RUNTIME_DIR memsup -o "$d" -- "$P/steady" 100 1000
	[ "$rc" -eq 0 ] || fail "memsup as bob exited $rc"
	rcheck "$d" "$polled" || exit 1
	grep -aiq '^memsup:.*cgroup' "$err" \
		|| fail "no 'memsup: ...cgroup...' line on stderr saying why there is no cgroup"
}

case_container_ro_cgroupfs() { # a container's view: own cgroup ns, cgroupfs read-only
	local d
	d=$(evdir)
	cat >/tmp/mtvm-ro.sh <<'EOF'
set -e
mount --make-rprivate /
if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
	umount -l /sys/fs/cgroup
	mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 /sys/fs/cgroup
fi
# read-only per mount (bind remount): the host's mounts stay writable
findmnt -rn -R -o TARGET /sys/fs/cgroup | while read -r m; do
	mount -o remount,bind,ro "$m"
done
echo "in the container: $(tr '\n' ' ' </proc/self/cgroup)"
findmnt -rn -R -o TARGET,FSTYPE,OPTIONS /sys/fs/cgroup | head -4
exec "$@"
EOF
	run_cmd unshare --cgroup --mount --fork bash /tmp/mtvm-ro.sh memsup -o "$d" -- "$P/steady" 100 1000
	grep -av '^memsup' "$err" | head -6
	[ "$rc" -eq 0 ] || fail "memsup exited $rc"
	rcheck "$d" "$polled" || exit 1
	grep -aiq '^memsup:.*read-only' "$err" || fail "no 'memsup: ...read-only...' line on stderr"
}

case_mem_max() { # the kernel's limit: exit 123, nothing held above 100 MB
	local d
	d=$(evdir)
	run_cmd memsup -o "$d" --mem-max 100 -- "$P/steady" 300 1000
	[ "$rc" -eq 123 ] || fail "memsup --mem-max 100 exited $rc, expected 123"
	rcheck "$d" "r['reason'] == 'mem_limit_exceeded'" "$cgroup" "r['peak_mb'] <= 100"
}

case_limit_undone() { # the command raises its own --mem-max: set back, said, still held
	local d
	d=$(evdir)
	cat >/tmp/mtvm-raise.sh <<'EOF'
f=$(grep -m1 -E ':memory:|^0::' /proc/self/cgroup | cut -d: -f3)
for m in /sys/fs/cgroup/memory /sys/fs/cgroup; do
	if [ -e "$m$f/memory.limit_in_bytes" ]; then
		echo 1000000000 >"$m$f/memory.memsw.limit_in_bytes" 2>/dev/null
		echo 1000000000 >"$m$f/memory.limit_in_bytes"; break
	elif [ -e "$m$f/memory.max" ]; then
		echo 1000000000 >"$m$f/memory.max"; break
	fi
done
exec "$@"
EOF
	run_cmd memsup -o "$d" --mem-max 50 -- sh /tmp/mtvm-raise.sh "$P/steady" 300 1500
	[ "$rc" -eq 123 ] || fail "memsup --mem-max 50 exited $rc, expected 123"
	rcheck "$d" "r['reason'] == 'mem_limit_exceeded'" "r['peak_mb'] <= 50" \
		"any('changed the run' in n for n in r['notes'])"
}

case_fork_bomb() { # held within 1 s of the bomb's start, exit 122
	local d
	d=$(evdir)
	run_cmd memsup -o "$d" --max-procs 50 -- "$P/bomb"
	[ "$rc" -eq 122 ] || fail "memsup --max-procs 50 exited $rc, expected 122"
	# held by the kernel (pids.max: never more than 50), and ended within
	# 1 s of the start by a memsup the bomb's runnable tasks cannot starve
	rcheck "$d" "r['reason'] == 'procs_budget_exceeded'" "r['max_procs_by'] == 'pids.max'" \
		"r['max_processes'] <= 50" \
		"r['max_procs_reached_at_s'] is not None and r['max_procs_reached_at_s'] <= 1.0"
}

# No limit anywhere: the machine runs out, and the global OOM killer takes
# the tree's largest process.  oom_three's children hold 5%, 10% and 60% of
# what the VM has available and its parent grows by 40%: the kernel kills
# child c (the largest; memsup and its sentinel are at oom_score_adj
# -1000), the parent grows on, ends the rest and exits 0.
# The record names c as the global OOM killer's victim, from the kernel's
# log, and the evidence is whole: memsup and the sentinel lived through it.
case_machine_oom() {
	local d avail a b c g cpid
	d=$(evdir)
	avail=$(awk '/^MemAvailable:/ { print int($2 * 1.024 / 1000) }' /proc/meminfo)
	a=$((avail / 20)) b=$((avail / 10)) c=$((avail * 6 / 10)) g=$((avail * 4 / 10))
	echo "MemAvailable ${avail} MB: children of $a, $b and $c MB, the parent growing to $g MB"
	rm -f /tmp/mtvm-pids
	run_cmd memsup -o "$d" -- "$P/oom_three" /tmp/mtvm-pids "$a" "$b" "$c" "$g"
	[ "$rc" -eq 0 ] || fail "memsup exited $rc: one child's kill should not end the run"
	cpid=$(sed -n 's/.* c=\([0-9]*\).*/\1/p' /tmp/mtvm-pids)
	[ -n "$cpid" ] || fail "no pids from oom_three"
	grep -a 'oom_kill' "$err" | cut -c1-300
	rcheck "$d" "r['reason'] is None and r['exit_code'] == 0" \
		"r['oom'] and r['oom'][0]['victim']['pid'] == $cpid" \
		"r['oom'][0]['limit']['by'] == 'machine'" \
		"r['oom'][0]['source'] == 'kernel_log'" \
		"r['oom'][0]['limit']['constraint'] == 'CONSTRAINT_NONE'" \
		"r['oom_memsup_protected']" \
		"any(b['kind'] == 'oom_kill' for b in r['blind_spots'])" || exit 1
	for f in resources.json timeline.jsonl processes.json stacks.json timeline.svg; do
		[ -s "$d/$f" ] || fail "the evidence lacks $f"
	done
}

# The scope memsup asks for changes nothing the command sees: a terminal
# (script(1) gives the run a pty), the working directory, the environment,
# the exit status.  On v2 memsup, root in the service's shared cgroup, runs
# in memsup-PID.scope; on v1 it needs none.  USER: root or alice.
terminal_run() {
	local d owner=$1 want_scope=None
	[ "$boot" = v2 ] && want_scope="'memsup-'"
	d=$(evdir "$([ "$owner" = root ] || echo "$owner")")
	local w; w=$(dirname "$d")/cwd
	mkdir "$w" && chown "$owner" "$w"
	local inner="cd $w && FOO=bar memsup -o $d -- sh -c '[ -t 0 ] && [ -t 1 ] && echo TTY=yes; echo CWD=\$(pwd) FOO=\$FOO; exit 7'"
	if [ "$owner" = root ]; then
		run_cmd script -qec "$inner" "$w.typescript"
	else
		wait_user_manager $ALICE || exit 1
		run_cmd runuser -u "$owner" -- script -qec "$inner" "$w.typescript"
	fi
	tr -d '\r' <"$w.typescript" | grep -aE '^(TTY|CWD)=' | sed 's/^/saw: /'
	[ "$rc" -eq 7 ] || fail "memsup at a terminal exited $rc, expected the command's 7"
	grep -aq '^TTY=yes' "$w.typescript" || fail "the command had no terminal"
	grep -aq "^CWD=$w FOO=bar" "$w.typescript" || fail "the command's cwd or environment changed"
	if [ "$want_scope" = None ]; then
		rcheck "$d" "c['scope'] is None" "r['exit_code'] == 7"
	else
		rcheck "$d" "$cgroup" "c['scope'] is not None and c['scope']['unit'].startswith($want_scope)" \
			"r['exit_code'] == 7"
	fi
}
case_terminal_through_the_scope() { terminal_run root; }
case_terminal_through_the_user_scope() {
	[ "$boot" = v2 ] || { echo "v1: no user scope to go through"; return 0; }
	terminal_run alice
}

case_signal_through_the_scope() { # SIGTERM to memsup ends the run; its scope goes
	local d pid unit
	d=$(evdir)
	memsup -o "$d" -- sleep 60 >/dev/null 2>&1 </dev/null &
	pid=$!
	unit=memsup-$pid.scope
	sleep 2
	[ "$boot" = v2 ] && { systemctl is-active --quiet "$unit" || fail "$unit is not active"; }
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	echo "memsup got SIGTERM: exit $rc"
	[ "$rc" -eq 143 ] || fail "memsup exited $rc, expected 143 (128 + SIGTERM)"
	rcheck "$d" "r['reason'] == 'interrupted'" || exit 1
	sleep 1
	if systemctl list-units --all --no-legend --plain "$unit" 2>/dev/null | grep -q .; then
		fail "$unit still listed: $(systemctl list-units --all --no-legend --plain "$unit")"
	fi
}

case_sigkill_through_the_scope() { # memsup SIGKILLed: its sentinel ends the run, the scope goes
	local d pid unit left
	d=$(evdir)
	memsup -o "$d" -- "$P/steady" 50 60000 >/dev/null 2>&1 </dev/null &
	pid=$!
	unit=memsup-$pid.scope
	sleep 2
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	for _ in $(seq 1 50); do # the sentinel's clean-up: bounded
		left=$(find /sys/fs/cgroup -type d -name "memsup-$pid-*" 2>/dev/null; pgrep -x steady)
		[ -z "$left" ] && break
		sleep 0.2
	done
	[ -z "$left" ] || fail "left after memsup's SIGKILL: $left"
	rcheck "$d" "r['reason'] == 'supervisor_killed'" || exit 1
	sleep 1
	if systemctl list-units --all --no-legend --plain "$unit" 2>/dev/null | grep -q .; then
		fail "$unit still listed: $(systemctl list-units --all --no-legend --plain "$unit")"
	fi
}

case_delegated_stays() { # MEMSUP_DELEGATED=1: no scope asked for, and the line says why
	local d
	[ "$boot" = v2 ] || { echo "v1: root needs no scope"; return 0; }
	d=$(evdir)
	run_cmd env MEMSUP_DELEGATED=1 memsup -o "$d" -- "$P/steady" 100 1000
	[ "$rc" -eq 0 ] || fail "memsup exited $rc"
	rcheck "$d" "$polled" "c['scope'] is None" || exit 1
	grep -aq '^memsup: no memory cgroup for this run' "$err" \
		|| fail "no 'memsup: no memory cgroup for this run' line"
}

case_nested() { # a memsup inside memsup stays in the outer run, which counts it
	local d e
	d=$(evdir)
	e=$(dirname "$d")/inner
	run_cmd memsup -o "$d" -- memsup -o "$e" -- "$P/steady" 200 1500
	[ "$rc" -eq 0 ] || fail "nested memsup exited $rc"
	rcheck "$e" "$cgroup" "$near200" "c['scope'] is None" || exit 1
	rcheck "$d" "$cgroup" "r['peak_mb'] >= 194"
}

case_nothing_left() { # no cgroup, scope or process of a run survives it
	local bad=0 left
	left=$(find /sys/fs/cgroup -type d -name 'memsup-*' 2>/dev/null)
	[ -z "$left" ] || { echo "cgroups left: $left"; bad=1; }
	left=$(systemctl list-units --all --type=scope --no-legend --plain 2>&1 | grep -i memsup)
	[ -z "$left" ] || { echo "system scopes left: $left"; bad=1; }
	if systemctl is-active --quiet user@$ALICE.service; then
		left=$(systemctl --user -M alice@ list-units --all --type=scope --no-legend --plain 2>&1 | grep -i memsup)
		[ -z "$left" ] || { echo "alice's scopes left: $left"; bad=1; }
	fi
	for p in steady bomb grower oom_three memsup; do
		left=$(pgrep -a -x "$p")
		[ -z "$left" ] || { echo "processes left: $left"; bad=1; }
	done
	[ "$bad" -eq 0 ]
}

cases=(layout root_shared_cgroup root_scope user_lingering user_lingering_no_xdg
	user_no_manager container_ro_cgroupfs mem_max limit_undone fork_bomb
	terminal_through_the_scope
	terminal_through_the_user_scope signal_through_the_scope sigkill_through_the_scope
	delegated_stays nested machine_oom
	nothing_left)

if [ "${1:-}" = --case ]; then
	cd /tmp || exit 1
	"case_$2"
	exit $?
fi

# --- the facts of this boot (for whoever reads the log) --------------------
facts() {
	local u=/sys/fs/cgroup/user.slice/user-$ALICE.slice/user@$ALICE.service f
	echo "boot $boot: $(uname -r), $(systemctl --version | head -1)"
	echo "cmdline: $(cat /proc/cmdline)"
	echo "/sys/fs/cgroup: $(stat -fc %T /sys/fs/cgroup); mounts: $(findmnt -rn -R -o TARGET,FSTYPE /sys/fs/cgroup | tr '\n' ' ')"
	echo "this service's cgroup: $(tr '\n' ' ' </proc/self/cgroup)"
	local own
	own=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
	if [ -n "$own" ] && [ -d "/sys/fs/cgroup$own" ]; then
		for f in cgroup.controllers cgroup.subtree_control cgroup.procs pids.max memory.max; do
			[ -r "/sys/fs/cgroup$own/$f" ] && echo "  $own/$f: $(tr '\n' ' ' <"/sys/fs/cgroup$own/$f")"
		done
		echo "  owner: $(stat -c %U "/sys/fs/cgroup$own")"
	fi
	[ -r /sys/fs/cgroup/cgroup.subtree_control ] && echo "root subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
	wait_user_manager $ALICE
	echo "user@$ALICE.service: $(systemctl is-active user@$ALICE.service); user@$BOB.service: $(systemctl is-active user@$BOB.service)"
	echo "  $(systemctl show user@$ALICE.service -p ControlGroup -p Delegate -p DelegateControllers | tr '\n' ' ')"
	for f in cgroup.controllers cgroup.subtree_control; do
		[ -r "$u/$f" ] && echo "  $u/$f: $(cat "$u/$f")"
	done
	[ -d "$u" ] && echo "  owner of $u: $(stat -c %U "$u"); of its cgroup.procs: $(stat -c %U "$u/cgroup.procs" 2>/dev/null)"
	if [ "$boot" = v1 ]; then
		for h in memory pids systemd; do
			f=$(find /sys/fs/cgroup/$h -maxdepth 4 -type d -name "user@$ALICE.service" 2>/dev/null | head -1)
			[ -n "$f" ] && echo "  v1 $h: $f owner $(stat -c %U "$f")"
		done
	fi
	for f in /run/systemd/private /run/dbus/system_bus_socket /run/user/$ALICE/systemd/private \
		/run/user/$ALICE/bus /run/user/$BOB/systemd/private; do
		if [ -e "$f" ]; then echo "  exists: $f ($(stat -c '%U %A' "$f"))"; else echo "  absent: $f"; fi
	done
	echo "linger: $(find /var/lib/systemd/linger -mindepth 1 -printf '%f ')"
	echo "memsup: $(command -v memsup) $(memsup --version 2>&1 | head -1)"
}

filter=$(cat /etc/mtvm/cases 2>/dev/null)
facts 2>&1 | sed "s/^/$M# /"
n=0
for c in "${cases[@]}"; do
	[ -z "$filter" ] || [[ $c =~ $filter ]] || continue
	n=$((n + 1))
	out=$(mktemp /tmp/mtvm-out.XXXXXX)
	t=$SECONDS
	timeout -k 10 "$case_timeout" "$0" --case "$c" >"$out" 2>&1
	rc=$?
	el=$((SECONDS - t))
	if [ $rc -eq 0 ]; then
		echo "${M}ok $n - $c"
	elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "${M}not ok $n - $c # timed out after $case_timeout s"
	else
		echo "${M}not ok $n - $c"
	fi
	tail -30 "$out" | cut -c1-400 | sed "s/^/$M#   /"
	echo "${M}#   ($el s)"
	rm -f "$out"
done
echo "${M}1..$n"
echo "${M}# end of boot $boot"
