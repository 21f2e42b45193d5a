#!/usr/bin/env bash
# pids-guard.sh: run a command inside a pids-limited cgroup of its own, and
# leave nothing of it behind.
#
#   scripts/pids-guard.sh [--max N] [--] COMMAND [ARG...]
#
# Creates memtrace-guard-<pid> below this process's own cgroup, in the
# hierarchy that has the pids controller (cgroup v1 `pids`, or the v2
# unified tree where `pids` is enabled or can be), sets pids.max to N
# (default 6000: a fork bomb in a test stops there, far below the machine's
# pid_max), and runs COMMAND in it with MEMTRACE_PIDS_GUARD=<that directory>
# in its environment.  Where a v2 tree without pids is mounted beside v1
# (the hybrid layout), the command also joins a v2 cgroup of the same name
# so that cgroup.kill can end it at once.  When COMMAND ends (or this script
# gets INT, TERM or HUP), whatever is still in the cgroups is stopped and
# killed until none is left, and the cgroups are removed: pass or fail;
# so are the staging directories of the memsups killed there, and their
# run cgroups in the v1 memory and freezer hierarchies (outside the guard).
# Guards left by a guard that was itself SIGKILLed are emptied and removed
# the next time one starts.
#
# Where no pids-limited cgroup can be made (no pids controller, no write
# access), COMMAND runs unguarded, one line on stderr says why, and
# MEMTRACE_PIDS_GUARD stays unset: the tests that can make many processes
# (tests/e2e/test_guard.h) then skip themselves, saying so.
# Exit status: COMMAND's (128+N if it was killed by signal N).
set -u

max=6000
while [ $# -gt 0 ]; do
	case $1 in
	--max)
		[ $# -ge 2 ] || { echo "pids-guard: --max needs a value" >&2; exit 125; }
		case $2 in
		'' | *[!0-9]*) echo "pids-guard: --max: '$2' is not a whole number" >&2; exit 125 ;;
		esac
		if [ "${#2}" -gt 6 ] || [ "$2" -lt 10 ] || [ "$2" -gt 100000 ]; then
			echo "pids-guard: --max: '$2' is out of range (10..100000)" >&2
			exit 125
		fi
		max=$2
		shift 2
		;;
	-h | --help)
		sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	--) shift; break ;;
	-*) echo "pids-guard: unknown option '$1'" >&2; exit 125 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "pids-guard: no command" >&2; exit 125; }

# mount point of the hierarchy whose fstype is $1 ("cgroup" needs $2 among
# its super options, e.g. pids)
mount_of() {
	awk -v fs="$1" -v opt="${2:-}" '{
		for (i = 1; i <= NF; i++) if ($i == "-") break
		if ($(i + 1) != fs) next
		if (opt != "") { n = split($(i + 3), o, ","); hit = 0
			for (k = 1; k <= n; k++) if (o[k] == opt) hit = 1
			if (!hit) next }
		print $5; exit
	}' /proc/self/mountinfo
}

# this process's path in the v1 hierarchy holding controller $1, or in v2 ("")
own_path() {
	awk -F: -v c="$1" '{
		if (c == "" && $1 == "0" && $2 == "") { print $3; exit }
		if (c != "") { n = split($2, cs, ","); for (k = 1; k <= n; k++) if (cs[k] == c) { print $3; exit } }
	}' /proc/self/cgroup
}

# empty_and_remove DIR: stop, kill and wait until DIR and the cgroups below
# it (memsup's run cgroups, a nested guard) have no process, then rmdir
# them, deepest first.  cgroup.kill (v2) does it at once; otherwise SIGSTOP
# sweeps (a stopped process forks no more) then SIGKILL sweeps, until none
# is left.
empty_and_remove() {
	local dir=$1 tries=0 pids
	[ -d "$dir" ] || return 0
	if [ -w "$dir/cgroup.kill" ]; then
		echo 1 >"$dir/cgroup.kill" 2>/dev/null
	fi
	while :; do
		# find -exec, never `cat $(find ...)`: a cgroup removed between
		# the test above and the find leaves cat no file, and cat then
		# reads stdin, which a test's pipe may never close (a hang seen)
		pids=$(find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null </dev/null)
		[ -n "$pids" ] || break
		if [ $tries -lt 3 ]; then
			# shellcheck disable=SC2086 # one pid a word
			kill -STOP $pids 2>/dev/null
		else
			# shellcheck disable=SC2086
			kill -KILL $pids 2>/dev/null
		fi
		tries=$((tries + 1))
		if [ $tries -gt 600 ]; then
			echo "pids-guard: $dir still holds processes after 30 s:" $pids >&2
			return 1
		fi
		sleep 0.05
	done
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		find "$dir" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null
		rmdir "$dir" 2>/dev/null && return 0
		[ -d "$dir" ] || return 0
		sleep 0.1
	done
	echo "pids-guard: could not remove $dir" >&2
	return 1
}

# Guards of dead guards (SIGKILLed before they could clean up).
sweep_stale() {
	local parent=$1 d pid
	for d in "$parent"/memtrace-guard-*; do
		[ -d "$d" ] || continue
		pid=${d##*-}
		case $pid in '' | *[!0-9]*) continue ;; esac
		kill -0 "$pid" 2>/dev/null && continue
		empty_and_remove "$d"
	done
}

name=memtrace-guard-$$
dirs=()       # cgroups made, to join and remove
limited=""    # the one with pids.max
why=""

v1=$(mount_of cgroup pids)
if [ -n "$v1" ]; then
	parent=$v1$(own_path pids)
	parent=${parent%/}
	sweep_stale "$parent"
	if mkdir "$parent/$name" 2>/dev/null; then
		if echo "$max" >"$parent/$name/pids.max" 2>/dev/null; then
			dirs+=("$parent/$name")
			limited=$parent/$name
		else
			rmdir "$parent/$name"
			why="cannot write pids.max in $parent"
		fi
	else
		why="cannot create a cgroup in $parent"
	fi
fi
v2=$(mount_of cgroup2)
if [ -n "$v2" ]; then
	parent=$v2$(own_path "")
	parent=${parent%/}
	sweep_stale "$parent"
	if [ -z "$limited" ] && ! grep -qw pids "$parent/cgroup.subtree_control" 2>/dev/null; then
		# A delegated or root v2 tree may let us enable it for our children.
		echo +pids >"$parent/cgroup.subtree_control" 2>/dev/null
	fi
	if mkdir "$parent/$name" 2>/dev/null; then
		dirs+=("$parent/$name")
		if [ -z "$limited" ]; then
			if echo "$max" >"$parent/$name/pids.max" 2>/dev/null; then
				limited=$parent/$name
			else
				why="${why:+$why; }no pids controller in $parent"
			fi
		fi
	fi
fi
[ -n "$v1$v2" ] || why="no cgroup file system mounted"

# A memsup killed with its sentinel (both SIGKILLed above, when a test
# timed out) leaves its staging directory, memsup-<pid>-XXXXXX under
# /dev/shm or $MEMSUP_STAGING_DIR (supervisor/collect/staging.h).  Those
# made since this guard started, whose memsup is gone, are removed.
staging_root=${MEMSUP_STAGING_DIR:-/dev/shm}
started=$(mktemp "${TMPDIR:-/tmp}/memtrace-guard-start.XXXXXX") || started=""

# No such process, or only its zombie (killed above, its parent gone, not
# reaped yet).
gone() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	stat=${stat##*) }
	case ${stat%% *} in Z | X) return 0 ;; esac
	return 1
}

sweep_staging() {
	local d pid
	[ -n "$started" ] && [ -d "$staging_root" ] || return 0
	# find -newer compares to the nanosecond, bash's -nt to the second
	find "$staging_root" -mindepth 1 -maxdepth 1 -type d -name 'memsup-*-*' \
		-newer "$started" 2>/dev/null | while IFS= read -r d; do
		pid=${d#"$staging_root"/memsup-}
		pid=${pid%%-*}
		case $pid in '' | *[!0-9]*) continue ;; esac
		gone "$pid" || continue # a live memsup's, whoever owns it
		rm -rf -- "$d"
	done
}

# memsup's run cgroups in the v1 memory and freezer hierarchies sit below
# memsup's own cgroup there, which is this script's, not the guard: a memsup
# killed above together with its sentinel leaves them.  Those of a memsup
# that is gone are removed, deepest first, as the next memsup would
# (cgroup_sweep_stale); one that still holds a process is left alone.
sweep_run_cgroups() {
	local c mnt parent d pid
	for c in memory freezer; do
		mnt=$(mount_of cgroup "$c")
		[ -n "$mnt" ] || continue
		parent=$mnt$(own_path "$c")
		parent=${parent%/}
		for d in "$parent"/memsup-*-*; do
			[ -d "$d" ] || continue
			pid=${d#"$parent"/memsup-}
			pid=${pid%%-*}
			case $pid in '' | *[!0-9]*) continue ;; esac
			gone "$pid" || continue
			[ -z "$(find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null </dev/null)" ] || continue
			find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
		done
	done
}

cleanup() {
	local d rc=0
	for d in "${dirs[@]}"; do
		empty_and_remove "$d" || rc=1
	done
	sweep_run_cgroups
	sweep_staging
	[ -n "$started" ] && rm -f -- "$started"
	return $rc
}

if [ -z "$limited" ]; then
	echo "pids-guard: running unguarded ($why); tests that can make many processes will skip" >&2
	cleanup
	unset MEMTRACE_PIDS_GUARD
	exec "$@"
fi

child=""
on_signal() {
	trap '' INT TERM HUP
	[ -n "$child" ] && kill -TERM "$child" 2>/dev/null
	cleanup
	exit "$1"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP

(
	for d in "${dirs[@]}"; do
		echo "$BASHPID" >"$d/cgroup.procs" || { echo "pids-guard: cannot join $d" >&2; exit 125; }
	done
	export MEMTRACE_PIDS_GUARD=$limited
	exec "$@"
) &
child=$!
wait "$child"
rc=$?
cleanup || { [ $rc -eq 0 ] && rc=125; }
exit $rc
