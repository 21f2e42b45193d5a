#!/bin/bash
# cluster.sh: a real one-node Slurm cluster on this machine, for the tests.
#
#   tests/slurm/cluster.sh [--] COMMAND [ARG...]   start, run COMMAND, stop
#   . tests/slurm/cluster.sh                        the functions, to source
#
# Starts munged (as the munge user, its own key, socket, pid, seed and log
# files), slurmctld and slurmd (root) with every piece of state in one
# temporary directory: its own slurm.conf and cgroup.conf (SLURM_CONF points
# at them), ports no one listens on, StateSaveLocation, SlurmdSpoolDir, logs
# and pid files.  The one node is this host under a name of its own
# (mt<pid>: slurmd -N), with the CPUs and RealMemory `slurmd -C` finds, so
# the cgroups Slurm makes (slurm_<node> in each v1 hierarchy) are this
# cluster's alone and are removed at the end.  Plugins: proctrack/cgroup,
# task/cgroup and jobacct_gather/cgroup with cgroup/v1 on a v1 or hybrid
# machine; when the node cannot come up with them, or on a pure cgroup v2
# machine (Slurm's v2 plugin puts its cgroups below slurmd's own, which
# this script does not yet know how to remove), the cluster runs with
# proctrack/linuxproc, task/none and jobacct_gather/linux, and says why.
# Cores and memory are allocated (CR_Core_Memory), and the partition lets
# up to 8 jobs share a core (OverSubscribe=FORCE:8), so a test's jobs run
# side by side on a 2-core machine, each within its --mem.  No slurmdbd:
# accounting_storage/none, so sstat answers while a step runs, sacct never.
#
# SLURM_CLUSTER_PLUGINS=linuxproc starts it without the cgroup plugins at
# once (to try what a machine where they fail would run).
# Each wait is bounded (SLURM_CLUSTER_WAIT_S, default 90 s, for the node to
# become idle); when the cluster cannot start, the end of every daemon's
# log is printed.  The stop cancels every job, ends the daemons (TERM, then
# KILL), kills whatever is left in Slurm's cgroups and removes them, removes
# the directory, then checks /proc and /sys/fs/cgroup: no process of the
# cluster, no cgroup, no file may be left, or it says which and fails.
#
# Run as a command, it stops the cluster however COMMAND ends (or on INT,
# TERM, HUP) and exits with COMMAND's status; 77 when Slurm cannot run here
# (not root, not installed), 99 when the cluster did not start or did not
# stop clean.  COMMAND gets SLURM_CONF, MT_SLURM_DIR (the directory),
# MT_SLURM_NODE, MT_SLURM_PLUGINS (cgroup or linuxproc) and, after a
# fallback, MT_SLURM_FALLBACK (why).  Messages go to stderr, prefixed
# "slurm-cluster: ".
#
# Sourced, it defines slurm_cluster_usable, slurm_cluster_start,
# slurm_cluster_stop and slurm_cluster_logs (see each), and sets no trap:
# the caller calls slurm_cluster_stop from its own.

# ---- state -------------------------------------------------------------------

SC_DIR=""          # the temporary directory, "" when no cluster
SC_NODE=""         # the node's name
SC_PLUGINS=""      # cgroup or linuxproc
SC_FALLBACK=""     # why the cgroup plugins were not used
SC_CGPLUGIN=""     # cgroup/v1 (with SC_PLUGINS=cgroup)
SC_WHY=""          # why slurm_cluster_usable or slurm_cluster_start failed
SC_PIDS=()         # the daemons: munged slurmctld slurmd

sc_say() { echo "slurm-cluster: $*" >&2; }

# slurm_cluster_usable: 0 when this machine can run the cluster; else 1,
# with SC_WHY.
slurm_cluster_usable() {
	local p
	if [ "$(id -u)" -ne 0 ]; then
		SC_WHY="not root: slurmd must run as root to start jobs as their users"
		return 1
	fi
	for p in munged munge slurmctld slurmd slurmstepd srun sbatch squeue sinfo scontrol scancel sstat setpriv; do
		if ! command -v "$p" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$p" ]; then
			SC_WHY="no $p (Debian: slurmctld slurmd slurm-client munge; scripts/setup.sh installs them)"
			return 1
		fi
	done
	if ! id munge >/dev/null 2>&1; then
		SC_WHY="no munge user (the munge package makes it)"
		return 1
	fi
	return 0
}

# A TCP port no socket on this machine is bound to (the port numbers in
# /proc/net/tcp{,6} are hexadecimal).
sc_free_port() {
	local used p i
	used=$(awk 'NR > 1 { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
	for ((i = 0; i < 200; i++)); do
		p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
		printf '%04X\n' "$p" | grep -qxF -f - <(echo "$used") && continue
		[ "$p" = "${1:-}" ] && continue
		echo "$p"
		return 0
	done
	return 1
}

# The v1 hierarchies Slurm's cgroup/v1 plugin uses, as mounted here.
sc_v1_dirs() {
	local c
	for c in freezer memory cpuacct cpuset devices; do
		[ -d "/sys/fs/cgroup/$c" ] && echo "/sys/fs/cgroup/$c"
	done
}

# Every cgroup directory this cluster's Slurm made (or may have made):
# slurm_<node> in each v1 hierarchy.
sc_cgroups() {
	[ -n "$SC_NODE" ] || return 0
	find /sys/fs/cgroup -maxdepth 6 -type d -name "slurm_$SC_NODE" 2>/dev/null
}

# Processes of the cluster: the daemons, and any process whose command line
# names the directory or which sits in one of the cluster's cgroups.
sc_leftover_pids() {
	local p dirs
	dirs=$(sc_cgroups)
	for p in "${SC_PIDS[@]}"; do
		kill -0 "$p" 2>/dev/null && echo "$p"
	done
	if [ -n "$dirs" ]; then
		# shellcheck disable=SC2086 # one directory a word
		find $dirs \( -name cgroup.procs -o -name tasks \) -exec cat {} + 2>/dev/null
	fi
	# one grep over every process (a loop of them costs a minute on a
	# loaded machine); the names are /proc/PID/FILE
	{
		[ -n "$SC_DIR" ] && grep -laF -- "$SC_DIR" /proc/[0-9]*/cmdline
		grep -lE -- "/slurm_$SC_NODE(/|\$)" /proc/[0-9]*/cgroup
	} 2>/dev/null | awk -F/ -v me="$$" '$3 != me { print $3 }'
	return 0
}

# The leftovers of a cluster whose owner was SIGKILLed before it could stop
# it (a test timed out, then its pids guard emptied the guard's cgroup):
# its directory /tmp/mtslurm.<pid>.XXXXXX and its cgroups slurm_mt<pid>,
# whose owner <pid> is gone.  Its processes (cmdline names the directory,
# or they sit in its cgroups) are killed first.
sc_sweep_stale() {
	local d pid saved_dir=$SC_DIR saved_node=$SC_NODE saved_pids=("${SC_PIDS[@]}") left
	for d in /tmp/mtslurm.*.* /sys/fs/cgroup/*/slurm_mt*; do
		[ -d "$d" ] || continue
		case $d in
		/tmp/*) pid=${d#/tmp/mtslurm.}; pid=${pid%%.*} ;;
		*) pid=${d##*/slurm_mt} ;;
		esac
		case $pid in '' | *[!0-9]*) continue ;; esac
		kill -0 "$pid" 2>/dev/null && continue
		SC_NODE=mt$pid SC_PIDS=()
		SC_DIR=""
		case $d in /tmp/*) SC_DIR=$d ;; esac
		left=$(sc_leftover_pids | sort -u | tr '\n' ' ')
		# shellcheck disable=SC2086 # one pid a word
		[ -n "$left" ] && kill -KILL $left 2>/dev/null
		sc_remove_cgroups
		# the staging directories of the memsups killed here
		# (supervisor/collect/staging.h: memsup-<pid>-XXXXXX)
		for pid in $left; do
			rm -rf -- "${MEMSUP_STAGING_DIR:-/dev/shm}/memsup-$pid-"*
		done
		[ -n "$SC_DIR" ] && rm -rf -- "$SC_DIR"
		sc_say "removed the leftovers of a dead cluster: $d"
	done
	SC_DIR=$saved_dir SC_NODE=$saved_node SC_PIDS=("${saved_pids[@]}")
}

# slurm_cluster_logs: the end of each daemon's log, on stderr.
slurm_cluster_logs() {
	local f
	[ -n "$SC_DIR" ] && [ -d "$SC_DIR" ] || return 0
	for f in "$SC_DIR"/log/*.log "$SC_DIR"/munge/munged.log; do
		[ -s "$f" ] || continue
		echo "slurm-cluster: ---- the end of ${f#"$SC_DIR"/} ----" >&2
		tail -n "${1:-30}" "$f" | sed 's/^/slurm-cluster:   /' >&2
	done
}

sc_write_conf() { # ctld-port slurmd-port plugins
	local d=$SC_DIR node line
	line=$(slurmd -C 2>/dev/null | head -1)
	case $line in
	NodeName=*) ;;
	*) SC_WHY="slurmd -C printed no node line"; return 1 ;;
	esac
	# this host's CPUs and memory, under the cluster's node name
	node="NodeName=$SC_NODE NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 ${line#NodeName=* }"
	cat >"$d/slurm.conf" <<EOF
# slurm.conf of a test cluster (tests/slurm/cluster.sh); removed at its end
ClusterName=mt$$
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
KillWait=10
MinJobAge=600
InactiveLimit=0
MessageTimeout=30
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherFrequency=task=1
EOF
	if [ "$3" = cgroup ]; then
		cat >>"$d/slurm.conf" <<EOF
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/cgroup
EOF
	else
		cat >>"$d/slurm.conf" <<EOF
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
EOF
	fi
	cat >>"$d/slurm.conf" <<EOF
$node State=UNKNOWN
PartitionName=mt Nodes=$SC_NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
	# cgroup.conf only for the cgroup plugins: the fallback must not depend
	# on what made them fail
	rm -f "$d/cgroup.conf"
	[ "$3" = cgroup ] || return 0
	cat >"$d/cgroup.conf" <<EOF
CgroupPlugin=$SC_CGPLUGIN
ConstrainRAMSpace=yes
ConstrainSwapSpace=no
ConstrainCores=no
ConstrainDevices=no
EOF
}

# Start the three daemons with the configuration in SC_DIR; wait (bounded)
# until the node is idle.  0, or 1 with SC_WHY.
sc_start_daemons() { # plugins
	local d=$SC_DIR ctld sd i state wait_s=${SLURM_CLUSTER_WAIT_S:-90}
	if ! ctld=$(sc_free_port) || ! sd=$(sc_free_port "$ctld"); then
		SC_WHY="no free TCP port found"
		return 1
	fi
	sc_write_conf "$ctld" "$sd" "$1" || return 1
	export SLURM_CONF=$d/slurm.conf
	# Foreground daemons (-D), each in a session of its own, so that their
	# pids are known and a terminal's ^C reaches only the trap that stops
	# them; no fd of the caller's stays open in them (a test harness waits
	# for its pipe to close).
	setsid slurmctld -D -f "$SLURM_CONF" </dev/null >>"$d/log/slurmctld.out" 2>&1 &
	SC_PIDS+=($!)
	setsid slurmd -D -N "$SC_NODE" -f "$SLURM_CONF" </dev/null >>"$d/log/slurmd.out" 2>&1 &
	SC_PIDS+=($!)
	for ((i = 0; i < wait_s * 4; i++)); do
		if ! kill -0 "${SC_PIDS[1]}" 2>/dev/null; then
			SC_WHY="slurmctld exited"
			return 1
		fi
		if ! kill -0 "${SC_PIDS[2]}" 2>/dev/null; then
			SC_WHY="slurmd exited"
			return 1
		fi
		state=$(timeout 10 sinfo -h -n "$SC_NODE" -o %T 2>/dev/null)
		case $state in
		idle) return 0 ;;
		down* | drain* | fail* | inval*)
			# slurmd said why in its log; give it a moment to say it
			if [ $i -gt 8 ]; then
				SC_WHY="node $SC_NODE is $state"
				return 1
			fi
			;;
		esac
		sleep 0.25
	done
	SC_WHY="node $SC_NODE not idle after ${wait_s} s (state: ${state:-no answer})"
	return 1
}

# End the slurm daemons (TERM, then KILL after 15 s) and every job step.
sc_stop_daemons() {
	local p i left
	if [ ${#SC_PIDS[@]} -gt 1 ] && kill -0 "${SC_PIDS[1]}" 2>/dev/null; then
		# every job first, so that slurmd ends its steps (KillWait)
		timeout 20 scancel --full --quiet --partition=mt >/dev/null 2>&1
		for ((i = 0; i < 60; i++)); do
			[ -z "$(timeout 10 squeue -h -t R,CG,PD,S -o %i 2>/dev/null)" ] && break
			sleep 0.5
		done
	fi
	for p in "${SC_PIDS[@]:1}"; do kill -TERM "$p" 2>/dev/null; done
	for ((i = 0; i < 60; i++)); do
		left=""
		for p in "${SC_PIDS[@]:1}"; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
		[ -z "$left" ] && break
		sleep 0.25
	done
	for p in $left; do kill -KILL "$p" 2>/dev/null; done
	for p in "${SC_PIDS[@]:1}"; do wait "$p" 2>/dev/null; done
	SC_PIDS=("${SC_PIDS[0]}")
}

# Empty and remove Slurm's cgroups of this cluster, deepest first (thawing a
# frozen freezer cgroup first: a frozen task cannot die).
sc_remove_cgroups() {
	local dirs i pids
	for ((i = 0; i < 100; i++)); do
		dirs=$(sc_cgroups)
		[ -n "$dirs" ] || return 0
		# shellcheck disable=SC2086
		find $dirs -name freezer.state 2>/dev/null | while IFS= read -r f; do
			grep -q THAWED "$f" || echo THAWED >"$f" 2>/dev/null
		done
		# shellcheck disable=SC2086
		pids=$(find $dirs \( -name cgroup.procs -o -name tasks \) -exec cat {} + 2>/dev/null | sort -u)
		# shellcheck disable=SC2086
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
		# shellcheck disable=SC2086
		find $dirs -depth -type d -exec rmdir {} + 2>/dev/null
		sleep 0.1
	done
	return 1
}

# slurm_cluster_start: make the directory, start munged, slurmctld and
# slurmd and wait until the node is idle; with the cgroup plugins first,
# else (saying why) without.  0; or 1 with SC_WHY, the logs printed and
# everything stopped and removed.
slurm_cluster_start() {
	local d
	slurm_cluster_usable || return 1
	# Short: the munge socket's path must fit a sockaddr_un (108 bytes),
	# wherever the checkout is.
	sc_sweep_stale
	d=$(mktemp -d "/tmp/mtslurm.$$.XXXXXX") || { SC_WHY="mktemp failed"; return 1; }
	chmod 755 "$d"
	SC_DIR=$d
	SC_NODE=mt$$
	SC_PIDS=()
	mkdir "$d/munge" "$d/state" "$d/spool" "$d/log" "$d/work"
	# munged wants its files owned by the munge user, the key private, and
	# the socket's directory searchable by all.
	head -c 1024 /dev/urandom >"$d/munge/key"
	chown -R munge:munge "$d/munge"
	chmod 711 "$d/munge"
	chmod 400 "$d/munge/key"
	setsid setpriv --reuid=munge --regid=munge --init-groups -- munged -F \
		--socket="$d/munge/sock" --key-file="$d/munge/key" \
		--pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" \
		--seed-file="$d/munge/seed" </dev/null >/dev/null 2>&1 &
	SC_PIDS=($!)
	local i
	for ((i = 0; i < 120; i++)); do
		[ -S "$d/munge/sock" ] && break
		kill -0 "${SC_PIDS[0]}" 2>/dev/null || break
		sleep 0.25
	done
	if ! munge -S "$d/munge/sock" -n 2>/dev/null | unmunge -S "$d/munge/sock" >/dev/null 2>&1; then
		SC_WHY="munged did not start or does not answer on $d/munge/sock"
		slurm_cluster_logs
		slurm_cluster_stop >/dev/null 2>&1
		return 1
	fi

	SC_PLUGINS=cgroup
	SC_FALLBACK=""
	if [ "${SLURM_CLUSTER_PLUGINS:-}" = linuxproc ]; then
		SC_FALLBACK="SLURM_CLUSTER_PLUGINS=linuxproc"
	elif [ "$(stat -f -c %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
		SC_FALLBACK="pure cgroup v2: the cgroups Slurm's cgroup/v2 makes are not removed by this script yet"
	else
		SC_CGPLUGIN=cgroup/v1
		[ -n "$(sc_v1_dirs)" ] || SC_FALLBACK="no cgroup v1 hierarchy under /sys/fs/cgroup"
	fi
	if [ -z "$SC_FALLBACK" ]; then
		sc_start_daemons cgroup && return 0
		if ! kill -0 "${SC_PIDS[1]}" 2>/dev/null; then
			# slurmctld does not use the cgroup plugins: no fallback helps
			slurm_cluster_logs
			slurm_cluster_stop >/dev/null 2>&1
			return 1
		fi
		SC_FALLBACK="with proctrack/cgroup, task/cgroup and $SC_CGPLUGIN: $SC_WHY"
		sc_say "the cgroup plugins cannot start here ($SC_FALLBACK); the daemons said:"
		slurm_cluster_logs 15
		sc_stop_daemons
		sc_remove_cgroups
		rm -rf "$d/state" "$d/spool" "$d/log"
		mkdir "$d/state" "$d/spool" "$d/log"
	fi
	SC_PLUGINS=linuxproc
	sc_say "falling back to proctrack/linuxproc, task/none, jobacct_gather/linux: $SC_FALLBACK"
	if sc_start_daemons linuxproc; then
		return 0
	fi
	slurm_cluster_logs
	slurm_cluster_stop >/dev/null 2>&1
	return 1
}

# slurm_cluster_stop: stop everything and remove it; then check that no
# process, cgroup or file of the cluster is left.  0, or 1 saying what was
# left.  Safe to call twice, and when nothing was started.
slurm_cluster_stop() {
	local rc=0 left cg
	[ -n "$SC_DIR" ] || return 0
	sc_stop_daemons
	# munged last: slurmd and slurmctld talk to it until they end
	if [ ${#SC_PIDS[@]} -gt 0 ]; then
		kill -TERM "${SC_PIDS[0]}" 2>/dev/null
		for ((i = 0; i < 40; i++)); do
			kill -0 "${SC_PIDS[0]}" 2>/dev/null || break
			sleep 0.25
		done
		kill -KILL "${SC_PIDS[0]}" 2>/dev/null
		wait "${SC_PIDS[0]}" 2>/dev/null
	fi
	sc_remove_cgroups || rc=1
	left=$(sc_leftover_pids | sort -u | tr '\n' ' ')
	if [ -n "$left" ]; then
		# shellcheck disable=SC2086 # one pid a word
		kill -KILL $left 2>/dev/null
		sleep 0.5
		sc_remove_cgroups
		left=$(sc_leftover_pids | sort -u | tr '\n' ' ')
	fi
	[ -z "$left" ] || { sc_say "processes of the cluster still alive: $left"; rc=1; }
	cg=$(sc_cgroups | tr '\n' ' ')
	[ -z "$cg" ] || { sc_say "cgroups of the cluster left: $cg"; rc=1; }
	rm -rf -- "$SC_DIR"
	[ ! -e "$SC_DIR" ] || { sc_say "could not remove $SC_DIR"; rc=1; }
	SC_DIR=""
	SC_PIDS=()
	unset SLURM_CONF
	return $rc
}

# ---- as a command ------------------------------------------------------------

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	[ "${1:-}" = -- ] && shift
	if [ $# -eq 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
		sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'
		[ $# -eq 0 ] && exit 2
		exit 0
	fi
	if ! slurm_cluster_usable; then
		sc_say "cannot run here: $SC_WHY"
		exit 77
	fi
	# shellcheck disable=SC2317 # called by the traps below
	sc_on_signal() {
		trap '' INT TERM HUP
		[ -n "${sc_child:-}" ] && kill -TERM "$sc_child" 2>/dev/null
		slurm_cluster_stop
		exit "$1"
	}
	sc_child=""
	trap 'sc_on_signal 130' INT
	trap 'sc_on_signal 143' TERM
	trap 'sc_on_signal 129' HUP
	if ! slurm_cluster_start; then
		sc_say "the cluster did not start: $SC_WHY"
		exit 99
	fi
	sc_say "node $SC_NODE idle (plugins: $SC_PLUGINS${SC_FALLBACK:+, fallback: $SC_FALLBACK}); SLURM_CONF=$SLURM_CONF"
	export MT_SLURM_DIR=$SC_DIR MT_SLURM_NODE=$SC_NODE MT_SLURM_PLUGINS=$SC_PLUGINS
	[ -n "$SC_FALLBACK" ] && export MT_SLURM_FALLBACK=$SC_FALLBACK
	"$@" &
	sc_child=$!
	wait "$sc_child"
	rc=$?
	sc_child=""
	if ! slurm_cluster_stop; then
		sc_say "the cluster did not stop clean"
		[ $rc -eq 0 ] && rc=99
	fi
	exit $rc
fi
