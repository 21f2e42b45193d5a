#!/bin/bash
# slurm.sh: memsup on a real Slurm cluster.  Starts a one-node cluster on
# this machine (tests/slurm/cluster.sh: munged, slurmctld and slurmd with
# every piece of state in a temporary directory), runs memsup in jobs and
# job steps on workloads of known sizes (tests/progs), checks what memsup
# recorded against the sizes and against what Slurm did and said, and
# stops the cluster, pass or fail.  Output: TAP.
#
#   1  the cluster starts; the plugins it runs with (and why, after a fallback)
#   2  the job array of memsup-report(1): 6 tasks, 2 at a time, memsup in
#      each with --meta labels; `memsup report` over the array
#   3  memsup inside a job step: its cgroup below the step's, its peak the
#      workload's
#   4  Slurm's own figure for a step (sstat while it runs) within the range
#      memsup recorded for its poll
#   5  a task past Slurm's --mem: Slurm's cgroup OOM kill, in memsup's record,
#      the victim and Slurm's cgroup named
#   6  a task past memsup's --rss-mb under Slurm's --mem: memsup's budget
#   7  scancel of a running task: reason interrupted, exit 143
#   8  a task past --time: reason interrupted, exit 143
#   9  the cluster stops: no daemon, no cgroup, no file left
#
# Needs MEMSUP, MT_PROGS and MT_SRCDIR (AM_TESTS_ENVIRONMENT), root,
# python3, and Slurm and munge (Debian: slurmctld slurmd slurm-client
# munge); skips, saying why, without them.  Each wait is bounded
# (SLURM_TEST_WAIT_S, default 240 s for a job); a failure prints the
# daemons' logs.
set -u

: "${MEMSUP:?MEMSUP is not set}"
: "${MT_PROGS:?MT_PROGS is not set}"
: "${MT_SRCDIR:?MT_SRCDIR is not set}"
WAIT_S=${SLURM_TEST_WAIT_S:-240}
NCASES=9

# shellcheck source=tests/slurm/cluster.sh
. "$MT_SRCDIR/tests/slurm/cluster.sh"

if ! command -v python3 >/dev/null 2>&1; then
	echo "1..0 # SKIP no python3: the records cannot be read"
	exit 0
fi
if ! slurm_cluster_usable; then
	echo "1..0 # SKIP $SC_WHY"
	exit 0
fi

n=0
fails=0
echo "1..$NCASES"
ok() { n=$((n + 1)); echo "ok $n - $1"; }
bad() {
	n=$((n + 1))
	fails=$((fails + 1))
	echo "not ok $n - $1: $2"
	[ -n "$SC_DIR" ] && slurm_cluster_logs 12 2>&1 | sed 's/^/# /'
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
note() { echo "# $*"; }

finish() {
	trap '' INT TERM HUP
	slurm_cluster_stop 2>&1 | sed 's/^/# /'
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# check NAME ARG... <<'PY' ... PY: ok when the Python code on stdin (run
# with ARG... in sys.argv[1:], and rec(dir), slurm(jobid), mb(text) at
# hand) raises nothing; else not ok with the assertion's text.  What it
# prints goes to the TAP stream as comments.
check() {
	local name=$1 code out rc
	shift
	code=$(cat)
	out=$(python3 - "$@" 2>&1 <<PY
import json, os, subprocess, sys
def rec(d):
    with open(os.path.join(d, "resources.json")) as f:
        return json.load(f)
def slurm(job):
    """scontrol's fields of a job (or of each task of an array), as dicts"""
    out = subprocess.run(["scontrol", "-o", "show", "job", str(job)],
                         capture_output=True, text=True, timeout=60).stdout
    jobs = []
    for line in out.splitlines():
        d = {}
        for word in line.split():
            k, _, v = word.partition("=")
            d[k] = v
        jobs.append(d)
    return jobs
def mb(text):
    """Slurm's 123.45M / 2G / 1024K as decimal MB"""
    text = text.strip()
    if not text:
        return None
    scale = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}.get(text[-1])
    return float(text[:-1]) * scale / 1e6 if scale else float(text) / 1e6
$code
PY
)
	rc=$?
	if [ $rc -eq 0 ]; then
		ok "$name"
		[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/# /'
	else
		bad "$name" "$(printf '%s\n' "$out" | tail -1)"
		printf '%s\n' "$out" | sed 's/^/# /'
	fi
}

# run COMMAND...: run COMMAND and wait for it, as a foreground command
# would, but where INT, TERM and HUP reach the traps at once (bash runs a
# trap only once its foreground command ends; `wait` it interrupts).
run() {
	"$@" &
	wait $!
}

# wait_job JOBID: until no task of the job is pending, running, completing
# (bounded by WAIT_S).  0, or 1 when it did not end in time.
wait_job() {
	local i
	for ((i = 0; i < WAIT_S * 2; i++)); do
		[ -z "$(timeout 30 squeue -h -j "$1" -t PD,R,CG,S,CF -o %i 2>/dev/null)" ] && return 0
		sleep 0.5
	done
	return 1
}

# wait_file FILE [SECONDS]: until FILE exists (bounded).
wait_file() {
	local i
	for ((i = 0; i < ${2:-$WAIT_S} * 4; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.25
	done
	return 1
}

# ---- 1. the cluster ----------------------------------------------------------

if ! slurm_cluster_start; then
	bad "a one-node Slurm cluster starts" "$SC_WHY"
	for ((i = 2; i <= NCASES; i++)); do skip "case $i" "no cluster"; done
	exit 1
fi
ok "a one-node Slurm cluster starts (node $SC_NODE idle, plugins: $SC_PLUGINS${SC_CGPLUGIN:+ ($SC_CGPLUGIN)})"
if [ -n "$SC_FALLBACK" ]; then
	note "the cgroup plugins could not start, so Slurm runs with proctrack/linuxproc: $SC_FALLBACK"
fi
w=$SC_DIR/work
cd "$w" || exit 99
P=$MT_PROGS
M=$MEMSUP

# The jobs that take long start first and run beside the rest: the time
# limit (Slurm enforces it in whole minutes, checked every few seconds)
# and the task to cancel.
sleeper_job() { # NAME [sbatch options...]
	local name=$1
	shift
	cat >"$w/$name.sh" <<EOF
#!/bin/bash
srun "$M" -q -o "$w/$name" --meta case=$name -- "$P/sleeper" 600 2 "$w/$name.pids"
EOF
	sbatch --parsable -J "$name" --mem=100M -o "$w/$name.out" "$@" "$w/$name.sh"
}
# Case 8 waits a minute for Slurm's limit: CI's thorough check runs it
# (MT_THOROUGH=1, scripts/extra-checks.sh), the README's test command not.
time_job=""
if [ -n "${MT_THOROUGH:-}" ] && [ "$MT_THOROUGH" != 0 ]; then
	time_job=$(sleeper_job timelimit --time=1) || time_job=""
fi
cancel_job=$(sleeper_job cancelled) || cancel_job=""

# ---- 2. the job array --------------------------------------------------------

# memsup-report(1)'s array, at test size: task i holds 20*(i+1) MB.
cat >"$w/array.sh" <<EOF
#!/bin/bash
#SBATCH --array=0-5%2
#SBATCH --mem=300M --time=10
mbs=(20 40 60 80 100 120)
i=\$SLURM_ARRAY_TASK_ID
srun "$M" -q -o "$w/runs/\$SLURM_ARRAY_TASK_ID" \\
     --meta task=\$SLURM_ARRAY_TASK_ID --meta mb=\${mbs[i]} \\
     -- "$P/steady" "\${mbs[i]}" 1500
EOF
mkdir "$w/runs"
array_job=$(sbatch --parsable -o "$w/array-%A_%a.out" "$w/array.sh")
if [ -z "$array_job" ]; then
	bad "job array of 6 memsup runs, 2 at a time" "sbatch failed"
elif ! wait_job "$array_job"; then
	bad "job array of 6 memsup runs, 2 at a time" "not done after $WAIT_S s"
else
	"$M" report --sort meta:task "$w"/runs/* | sed 's/^/# /'
	"$M" report --json --sort meta:task "$w"/runs/* >"$w/array.json"
	check "job array of 6 memsup runs, 2 at a time: every row ok, labels and peaks right" "$w/array.json" "$array_job" <<'PY'
from datetime import datetime
rows = json.load(open(sys.argv[1]))
assert len(rows) == 6, f"{len(rows)} rows in memsup report, want 6"
spans = []
for i, r in enumerate(rows):
    mbs = 20 * (i + 1)
    assert r['status'] == "ok", f"row {i}: status {r['status']}, reason {r['reason']}"
    assert r['meta'] == {"task": str(i), "mb": str(mbs)}, f"row {i}: meta {r['meta']}"
    assert r['exit'] == 0 and r['reason'] is None, f"row {i}: exit {r['exit']}"
    # steady MB holds MB decimal MB, rounded up to 2 MiB, plus the program
    assert mbs <= r['peak_mb'] <= mbs + 8, f"task {i}: peak {r['peak_mb']} MB, holds {mbs}"
    t = rec(r['dir'])
    t0 = datetime.fromisoformat(t["started_at"].replace("Z", "+00:00")).timestamp()
    spans.append((t0, t0 + t["wall_s"]))
    print(f"task {i}: peak {r['peak_mb']:.1f} MB ({r['peak_source']}) for {mbs} MB held")
most = max(sum(1 for a, b in spans if a <= s < b) for s, _ in spans)
assert most <= 2, f"{most} tasks ran at once under %2"
tasks = slurm(sys.argv[2])
states = sorted(set(j.get("JobState") for j in tasks))
assert len(tasks) == 6 and states == ["COMPLETED"], f"Slurm: {len(tasks)} tasks, states {states}"
print(f"at most {most} tasks at once; Slurm: 6 tasks COMPLETED")
PY
fi

# ---- 3. memsup inside a job step ---------------------------------------------

# The step's own cgroups, then memsup: 3 children hold 30 MB each at once.
srun -J step --mem=300M --time=5 bash -c "cat /proc/self/cgroup >'$w/step.cgroup'; \
	MEMSUP_DEBUG=1 exec '$M' -q -o '$w/step' -- '$P/forktree' 3 30 5000" \
	>"$w/step.out" 2>"$w/step.err" &
step_srun=$!
# ---- 4. (beside it) Slurm's figure, polled while the step runs
step_job=""
for ((i = 0; i < WAIT_S * 4; i++)); do
	step_job=$(timeout 30 squeue -h -n step -o %i 2>/dev/null | head -1)
	[ -n "$step_job" ] && grep -q '"running"' "$w/step/resources.json" 2>/dev/null && break
	kill -0 "$step_srun" 2>/dev/null || break
	sleep 0.25
done
: >"$w/sstat.txt"
while kill -0 "$step_srun" 2>/dev/null; do
	[ -n "$step_job" ] && timeout 30 sstat -n -P -j "$step_job.0" \
		-o MaxRSS,AveRSS,MaxVMSize,NTasks >>"$w/sstat.txt" 2>>"$w/sstat.err"
	sleep 0.5
done
wait "$step_srun"
step_rc=$?
if [ $step_rc -ne 0 ]; then
	bad "memsup in a job step: its cgroup below the step's, peak the workload's" \
		"srun exited $step_rc: $(tail -3 "$w/step.err" | tr '\n' ' ')"
elif [ "$SC_PLUGINS" = cgroup ]; then
	check "memsup in a job step: its cgroup below the step's, peak the workload's" "$w/step" "$w/step.cgroup" "$w/step.err" <<'PY'
own = {}
for line in open(sys.argv[2]):
    _, ctl, path = line.rstrip("\n").split(":", 2)
    for c in ctl.split(","):
        own[c] = path
r = rec(sys.argv[1])
assert r['exit_code'] == 0 and r['reason'] is None, f"exit {r['exit_code']} reason {r['reason']}"
c = r['containment']
mem = [p for p in c["paths"] if p.startswith("/sys/fs/cgroup/memory/")]
step = "/sys/fs/cgroup/memory" + own['memory']
assert c["memory"] and mem, f"no memory cgroup: {c}"
assert "/slurm_" in step and "/step_" in step, f"the step runs in memory:{own['memory']}, not a Slurm cgroup"
assert os.path.dirname(mem[0]) == step, f"memsup made {mem[0]}, not below the step cgroup {step}"
# proctrack/cgroup's freezer cgroup is the step's: memsup's is below it too
frz = [p for p in c["paths"] if p.startswith("/sys/fs/cgroup/freezer/")]
fstep = "/sys/fs/cgroup/freezer" + own["freezer"]
assert frz and os.path.dirname(frz[0]) == fstep, f"freezer {frz}, not below the step's {fstep}"
debug = open(sys.argv[3]).read()
for want in (f"memsup's own memory cgroup: {step}", f"memsup's own freezer cgroup: {fstep}"):
    assert want in debug, f"MEMSUP_DEBUG=1 did not say {want!r}: {debug[:600]}"
# 3 x 30 MB at once, plus the programs
assert r['peak_source'] == "cgroup", f"peak_source {r['peak_source']}"
assert 90 <= r['peak_mb'] <= 100, f"peak {r['peak_mb']} MB for 3 x 30 MB"
print(f"step cgroup {step}; memsup run cgroup {mem[0]}; peak {r['peak_mb']:.1f} MB (cgroup)")
PY
else
	# Without Slurm's cgroups memsup makes its cgroup below its own place,
	# which is the slurmd's, and says so under MEMSUP_DEBUG=1.
	check "memsup in a job step (no Slurm cgroups here: $SC_FALLBACK): its own cgroup, peak the workload's" "$w/step" "$w/step.cgroup" "$w/step.err" <<'PY'
r = rec(sys.argv[1])
c = r['containment']
debug = open(sys.argv[3]).read()
assert "containment: chose" in debug, f"MEMSUP_DEBUG=1 said no choice: {debug[:600]}"
assert not any("/slurm_" in p for p in c["paths"]), c["paths"]
assert 90 <= r['peak_mb'] <= 100, f"peak {r['peak_mb']} MB for 3 x 30 MB"
print(f"memsup containment {c['mode']}: {c['paths']}; peak {r['peak_mb']:.1f} MB")
PY
fi

# Slurm's own figure beside memsup's.  memsup records the job it ran in
# and the range a poll of the summed RSS every JobAcctGatherFrequency
# (1 s here) could read of the run (resources.json "slurm"); sstat
# answers only while the step runs (no slurmdbd: sacct has nothing), and
# its MaxRSS must fall in that range.  slurm.json keeps both side by side.
note "sacct: $(timeout 30 sacct -n -j "${step_job:-0}" 2>&1 | head -1)"
check "Slurm's own figure for the step (sstat) within the range memsup recorded" "$w/step" "$w/sstat.txt" "$w/step/slurm.json" "$w/sstat.err" "$SC_PLUGINS" "${step_job:-}" <<'PY'
r = rec(sys.argv[1])
s = r['slurm']
gather = "cgroup" if sys.argv[5] == "cgroup" else "linux"
assert s and s['job_id'] == sys.argv[6] and s['step_id'] == "0", f"memsup's record of the job: {s}"
assert s['jobacct_gather'] == gather and s['poll_s'] == 1 and s['poll_from'] == "slurm.conf", s
# the figure Slurm's plugin reads: the task cgroup's anonymous memory (the
# run's and memsup's own), or /proc's RSS
assert s['poll_reads'] == ("cgroup_anon" if gather == "cgroup" else "summed_rss"), s
assert (s['memsup_anon_mb'] or 0) > 0 if gather == "cgroup" else s['memsup_anon_mb'] is None, s
lo, hi = s['poll_low_mb'], s['poll_high_mb']
# 3 x 30 MB held for 5 s, longer than a poll: every schedule reads it
assert 90 <= lo <= hi, f"memsup's range for Slurm's poll: {lo}..{hi} MB"
rows = [l.split("|") for l in open(sys.argv[2]).read().split() if l.count("|") >= 3]
if not rows:
    err = open(sys.argv[4]).read().strip() if os.path.exists(sys.argv[4]) else ""
    print(f"sstat gave no figure for the step ({err or 'no output'}): Slurm accounting is not available here")
    raise SystemExit(0 if sys.argv[5] != "cgroup" else f"sstat gave nothing: {err}")
maxrss = max(mb(x[0]) for x in rows if x[0])
fig = {"sstat_max_rss_mb": maxrss, "sstat_samples": len(rows), "jobacct_gather": gather,
       "memsup_slurm_poll_low_mb": lo, "memsup_slurm_poll_high_mb": hi,
       "memsup_peak_mb": r['peak_mb'], "memsup_peak_source": r['peak_source'],
       "memsup_largest_process_mb": r['rusage_children_maxrss_mb']}
json.dump(fig, open(sys.argv[3], "w"), indent=1)
print(f"sstat MaxRSS {maxrss:.1f} MB over {len(rows)} polls; memsup: a poll every 1 s reads "
      f"{lo:.1f}..{hi:.1f} MB; peak_mb {r['peak_mb']:.1f} ({r['peak_source']}), "
      f"one process at most {r['rusage_children_maxrss_mb']:.1f}")
# Slurm reads its counters a moment apart from memsup's, and its own /proc
# walk (linux): 5% and 1 MB
assert lo * 0.95 - 1 <= maxrss <= hi * 1.05 + 1, f"sstat MaxRSS {maxrss:.1f} outside memsup's {lo:.1f}..{hi:.1f}"
PY

# ---- 5. past Slurm's --mem: the cgroup OOM killer ----------------------------

# grower takes 8 MB every 20 ms up to 400 MB, then waits; the step may
# hold 150 MiB.  (--wall-s: were there no limit, a failure, not a hang.)
if [ "$SC_PLUGINS" = cgroup ]; then
	run srun -J oom --mem=150M --time=5 "$M" -q -o "$w/oom" --wall-s 60 -- "$P/grower" 8 20 400 \
		>"$w/oom.out" 2>"$w/oom.err"
	oom_rc=$?
	grep -i oom "$w/oom.err" | head -2 | sed 's/^/# srun said: /'
fi
if [ "$SC_PLUGINS" != cgroup ]; then
	skip "past Slurm's --mem: the OOM kill in memsup's record" \
		"no memory limit without task/cgroup ($SC_FALLBACK)"
else
	check "past Slurm's --mem: Slurm's OOM kill in memsup's record, with what the tree held" "$w/oom" "$oom_rc" "$(timeout 30 squeue -h -t all -n oom -o %i 2>/dev/null | head -1)" <<'PY'
r = rec(sys.argv[1])
rc = int(sys.argv[2])
limit = 150 * 1024 * 1024 / 1e6
assert r['exit_code'] == -9 and r['reason'] is None, \
    f"exit_code {r['exit_code']} reason {r['reason']}: want -9 (SIGKILL by the kernel), null"
assert r['oom_kills'] and r['oom_kills'] >= 1, f"oom_kills {r['oom_kills']}"
assert rc == 137, f"srun exited {rc}, memsup exits 128+9"
# Slurm's limit is on the step's task cgroup, which holds memsup too (more
# of it in a sanitizer build): the tree got most of it, never more
assert 0.6 * limit <= r['peak_mb'] <= limit * 1.01, f"peak {r['peak_mb']} MB, Slurm limit {limit:.1f}"
# the victim named, and Slurm's cgroup as the limit that fired
oom = r['oom']
assert oom, f"oom {oom}: the kill is counted ({r['oom_kills']}) but no victim is named"
k = oom[0]
assert k['victim']['pid'] == r['pid'], f"victim {k['victim']}, the command was {r['pid']}"
assert k['victim']['argv'] and k['victim']['argv'][0].endswith('grower'), k['victim']
assert k['limit']['by'] == 'above', f"limit {k['limit']}: {k['evidence']}"
assert k['limit']['limit_mb'] and abs(k['limit']['limit_mb'] - limit) < 2, k['limit']
assert [b for b in r['blind_spots'] if b['kind'] == 'oom_kill'], r['blind_spots']
job = slurm(sys.argv[3])
state = job[0].get("JobState") if job else "?"
print(f"memsup: exit_code -9, oom_kills {r['oom_kills']}, peak {r['peak_mb']:.1f} MB of the "
      f"{limit:.1f} MB limit; srun {rc}; Slurm job state {state}; victim "
      f"{k['victim']['pid']} by {k['limit']['cgroup']} ({k['source']})")
PY
fi

# ---- 6. memsup's --rss-mb under Slurm's --mem --------------------------------

run srun -J budget --mem=150M --time=5 "$M" -q -o "$w/budget" --rss-mb 60 --wall-s 60 -- "$P/grower" 8 20 400 \
	>"$w/budget.out" 2>"$w/budget.err"
budget_rc=$?
check "memsup's --rss-mb under Slurm's --mem: memsup's budget ends the task, no OOM kill" "$w/budget" "$budget_rc" <<'PY'
r = rec(sys.argv[1])
rc = int(sys.argv[2])
assert r['reason'] == "rss_budget_exceeded", f"reason {r['reason']}"
assert rc == 123 and r['exit_status'] == 123, f"srun exited {rc}, exit_status {r['exit_status']}"
assert r['oom_kills'] in (0, None), f"oom_kills {r['oom_kills']}"
assert 60 <= r['peak_tree_rss_mb'] <= 120, f"peak_tree_rss_mb {r['peak_tree_rss_mb']}"
print(f"memsup: rss_budget_exceeded at {r['peak_tree_rss_mb']:.1f} MB (budget 60), exit 123, no OOM kill")
PY

# ---- 7. scancel of a running task --------------------------------------------

if [ -z "$cancel_job" ]; then
	bad "scancel of a running task: reason interrupted, exit 143" "sbatch failed"
elif ! wait_file "$w/cancelled.pids"; then
	bad "scancel of a running task: reason interrupted, exit 143" "the task did not start in $WAIT_S s"
else
	scancel "$cancel_job"
	if ! wait_job "$cancel_job"; then
		bad "scancel of a running task: reason interrupted, exit 143" "still there after $WAIT_S s"
	else
		check "scancel of a running task: reason interrupted, exit 143, no process left" "$w/cancelled" "$w/cancelled.pids" "$cancel_job" <<'PY'
r = rec(sys.argv[1])
assert r['reason'] == "interrupted", f"reason {r['reason']}"
assert r['exit_status'] == 143, f"exit_status {r['exit_status']}"
left = [p for p in open(sys.argv[2]).read().split() if os.path.exists(f"/proc/{p}")]
assert not left, f"processes of the task alive: {left}"
state = slurm(sys.argv[3])[0].get("JobState")
assert state == "CANCELLED", f"Slurm job state {state}"
print(f"memsup: interrupted, exit_status 143 after {r['wall_s']:.1f} s; Slurm: {state}")
PY
	fi
fi

# ---- 8. past --time ----------------------------------------------------------

if [ -z "${MT_THOROUGH:-}" ] || [ "$MT_THOROUGH" = 0 ]; then
	skip "past --time: reason interrupted, exit 143" "a minute's wait: CI's thorough check runs it (MT_THOROUGH=1)"
elif [ -z "$time_job" ]; then
	bad "past --time: reason interrupted, exit 143" "sbatch failed"
elif ! wait_job "$time_job"; then
	bad "past --time: reason interrupted, exit 143" "still there after $WAIT_S s"
else
	check "past --time: reason interrupted, exit 143, no process left" "$w/timelimit" "$w/timelimit.pids" "$time_job" <<'PY'
r = rec(sys.argv[1])
assert r['reason'] == "interrupted", f"reason {r['reason']}"
assert r['exit_status'] == 143, f"exit_status {r['exit_status']}"
assert r['wall_s'] >= 55, f"ended after {r['wall_s']} s, the limit is 1 minute"
left = [p for p in open(sys.argv[2]).read().split() if os.path.exists(f"/proc/{p}")]
assert not left, f"processes of the task alive: {left}"
state = slurm(sys.argv[3])[0].get("JobState")
assert state == "TIMEOUT", f"Slurm job state {state}"
print(f"memsup: interrupted, exit_status 143 after {r['wall_s']:.1f} s; Slurm: {state}")
PY
fi

# ---- 9. the cluster stops clean ----------------------------------------------

node=$SC_NODE
dir=$SC_DIR
if out=$(slurm_cluster_stop 2>&1); then
	ok "the cluster stops: no daemon, no cgroup slurm_$node, no $dir left"
else
	bad "the cluster stops clean" "$(printf '%s\n' "$out" | tr '\n' ' ')"
fi
[ $fails -eq 0 ]
