#!/usr/bin/env python3
"""memsup_cpu.py: memsup's own CPU time per second of supervised run, next to
the original pure-Python measure_command (seed_measure.py, whose contract
scripts/memsup.py keeps), on the same idle process trees, in one run.

Each run supervises `bench/sleep_tree N SECONDS` (N idle processes in all, a
breadth-first tree of fan-out 9) at 10 ms polling:
  memsup       memsup -q -o DIR --poll-ms 10 [--no-trace] -- sleep_tree N S
               (--cgroup auto, the default: the tree's own cgroup where memsup
               can make one; the record's containment.mode is shown)
  memsup-scan  the same with --cgroup off: the /proc scan
  seed         python3 -c '...seed_measure.measure_command([sleep_tree, N, S], DIR)'
               (that pure-Python measure_command, named "seed" here; it
               polls every 0.01 s and has no option for it)

--unrelated N keeps N idle processes alive outside every tree for the whole
run (another sleep_tree), so that what a sample costs is seen against a busy
machine's process table: a scan of /proc pays for them, cgroup.procs does
not.  It must run inside a pids-limited cgroup (scripts/pids-guard.sh).

Sampling that follows the memory (dense while it moves, sparse at rest):
  memsup-dense   this memsup with --rss-mb 1000000: a budget keeps every sample
                 dense (the record's sampling.adaptive false), so the cost of
                 one sample is measured beside the default (the memsup row)
  memsup-before  --before BIN: another memsup binary (the commit before),
                 run with the same arguments; with --dense also held dense
                 (memsup-before-dense), the cost of its sample beside this one's
  floor rows     --floor-ms 10,100: bench/wake_floor at each period, so the
                 idle tree's cost is set against a bare 100 Hz and 10 Hz wake
  floor-reads    with --dense: wake_floor at --poll-ms reading, at each wake,
                 the files a dense sample of memsup reads for the same tree
                 (cgroup.procs, each process's statm, memory.usage_in_bytes)
                 of a v1 memory cgroup the benchmark makes below its own and
                 removes: the floor of any sampler that reads what a sample
                 must, so that memsup's own part is seen apart
The verdicts at the end: CPU per sample of memsup-dense for trees of 1 and 10
against the bare wake at --poll-ms (target at most 1.5x); the per-process
part of a sample, (per sample at N - per sample at 1) / (N - 1), in us; and
the idle CPU of the default memsup (--sparse-ms 100) against the 10 Hz
floor (target: no more).

What is measured is the CPU of the observer process alone, never of the tree
it watches: the driver waits for the observer with waitid(WNOWAIT), so that it
is a zombie that still has its /proc entry, then reads
  /proc/PID/schedstat  run time in ns of the process's (only) thread, and
  /proc/PID/stat       utime+stime (clock ticks, whole thread group;
                       cutime/cstime, the reaped children, are excluded)
and only then reaps it.  schedstat is the figure used when the observer never
had more than one thread (checked while it runs); otherwise utime+stime.  For
seed_measure.py, the CPU spent inside measure_command alone
(getrusage(RUSAGE_SELF) around the call, i.e. without the interpreter's
start-up) is shown too.

CPU per second = observer CPU / the run's own wall_s (from resources.json).
Runs are interleaved: every repetition runs every tree size under every
observer, rotating which goes first.  The floor row is bench/wake_floor, a C
loop that only wakes every POLL_MS: the CPU any 100 Hz poller pays on this
machine before it reads a single /proc file.
"""
import argparse
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean (distcheck, git status)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

SEED_RUNNER = r"""
import json, resource, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import seed_measure
out, argv = sys.argv[2], sys.argv[3:]
r0 = resource.getrusage(resource.RUSAGE_SELF)
rec = seed_measure.measure_command(argv, Path(out), wall_s=3600, rss_mb=100000)
r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"cpu_in_measure": cpu, "record": rec}))
"""


def find_seed(arg):
    cands = [arg, os.environ.get("MEMTRACE_SEED"),
             benchlib.SRC_DIR.parent / "shared" / "seed", "/work/shared/seed"]
    for c in cands:
        if c and (Path(c) / "seed_measure.py").exists():
            return Path(c).resolve()
    return None


def proc_cpu(pid):
    """(schedstat_s, stat_s) of a process, read while it is a zombie."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    hz = os.sysconf("SC_CLK_TCK")
    stat_s = (int(fields[11]) + int(fields[12])) / hz   # utime, stime
    try:
        sched_s = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        sched_s = None
    return sched_s, stat_s


def threads_of(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def sched_now(pid):
    """The running process's CPU so far (schedstat, s), or None."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def run_observer(argv, log, window=None):
    """Run argv, return its own CPU and thread count, then reap it.  window
    (a, z): also its CPU between a and z seconds after the start (read from
    schedstat while it runs), the steady part without its start and end."""
    with open(log, "wb") as out:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
    max_threads = 0
    wa = wz = None
    while True:
        # WNOWAIT: the process stays a zombie, so its /proc entry is readable.
        r = os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if r is not None:
            break
        max_threads = max(max_threads, threads_of(p.pid))
        now = time.monotonic() - t0
        if window and now >= window[0] and wa is None:
            wa = (now, sched_now(p.pid))
        if window and now <= window[1] and wa is not None:
            wz = (now, sched_now(p.pid))
        nap = 0.1
        if window and wa is None:
            nap = min(nap, max(window[0] - now, 0.001))
        elif window and now < window[1]:
            nap = min(nap, max(window[1] - now, 0.001))
        time.sleep(nap)
    wall = time.monotonic() - t0
    sched_s, stat_s = proc_cpu(p.pid)
    rc = p.wait()
    steady = None
    if wa and wz and wa[1] is not None and wz[1] is not None and wz[0] - wa[0] > 0.5:
        steady = {"from_s": wa[0], "to_s": wz[0], "cpu_s": wz[1] - wa[1]}
    return {"rc": rc, "sched_s": sched_s, "stat_s": stat_s, "threads": max_threads,
            "driver_wall": wall, "steady": steady}


class Bench:
    def __init__(self, args):
        self.args = args
        self.builddir = benchlib.find_builddir(args.builddir)
        self.memsup = Path(args.memsup) if args.memsup else benchlib.memsup_path(self.builddir)
        self.seed = find_seed(args.seed)
        self.tree = str(benchlib.bench_program(self.builddir, "sleep_tree"))
        self.floor = str(benchlib.bench_program(self.builddir, "wake_floor"))
        self.tmp = Path(tempfile.mkdtemp(prefix="mt-memsup-cpu-"))
        atexit.register(shutil.rmtree, self.tmp, True)  # the runs' evidence, gone with it
        self.memsup_extra = []
        self.help = ""
        if self.memsup:
            h = subprocess.run([str(self.memsup), "--help"], capture_output=True, text=True)
            self.help = h.stdout + h.stderr
            if "--no-trace" in self.help:
                self.memsup_extra.append("--no-trace")
        self.unrelated = None

    def memsup_argv(self, outdir, n, children=False, scan=False, dense=False, binary=None):
        return ([str(binary or self.memsup), "-q", "-o", str(outdir), "--poll-ms",
                 str(self.args.poll_ms)]
                + self.memsup_extra + (["--discovery", "children"] if children else [])
                + (["--cgroup", "off"] if scan or children else [])
                + (["--rss-mb", "1000000"] if dense else [])
                # the default follows the memory (--sparse-ms 100 since
                # sparse2); each binary runs with its own default
                + ["--", self.tree, str(n), str(self.args.seconds)])

    def start_unrelated(self):
        """N idle processes outside every measured tree, for the whole run."""
        n = self.args.unrelated
        if not n:
            return
        benchlib.require_pids_guard("memsup_cpu", "--unrelated")
        self.unrelated = subprocess.Popen([self.tree, str(n), "86000"],
                                          stdin=subprocess.DEVNULL, start_new_session=True)
        # wait until they are all there (the tree forks breadth first)
        for _ in range(600):
            if self.unrelated.poll() is not None:
                sys.exit("memsup_cpu: the unrelated processes could not be started")
            if sum(1 for d in os.listdir("/proc") if d.isdigit()) >= n:
                break
            time.sleep(0.05)
        time.sleep(1)

    def stop_unrelated(self):
        if self.unrelated:
            # the idle tree is a process group of its own (start_new_session)
            os.killpg(self.unrelated.pid, signal.SIGKILL)
            self.unrelated.wait()

    def seed_argv(self, outdir, n):
        return [sys.executable, "-c", SEED_RUNNER, str(self.seed), str(outdir),
                self.tree, str(n), str(self.args.seconds)]

    def reads_floor(self, n, log, win):
        """wake_floor at --poll-ms reading what a dense sample of a tree of n
        reads, the tree in a v1 memory cgroup of its own below the
        benchmark's; None where there is none to make."""
        home = next((ln.rstrip("\n").split(":", 2)[2] for ln in open("/proc/self/cgroup")
                     if ln.split(":")[1] == "memory"), None)
        base = Path("/sys/fs/cgroup/memory" + (home or ""))
        if home is None or not (base / "memory.usage_in_bytes").exists():
            return None
        cg = base / f"memsup-cpu-reads-{os.getpid()}-{n}"
        cg.mkdir()
        tree = None
        try:
            def enter():
                (cg / "cgroup.procs").write_text(str(os.getpid()))
            tree = subprocess.Popen([self.tree, str(n), str(self.args.seconds + 3)],
                                    preexec_fn=enter, start_new_session=True,
                                    stdin=subprocess.DEVNULL)
            pids = []
            for _ in range(500):
                pids = (cg / "cgroup.procs").read_text().split()
                if len(pids) >= n:
                    break
                time.sleep(0.01)
            files = [str(cg / "cgroup.procs")] + [f"/proc/{p}/statm" for p in pids] + \
                [str(cg / "memory.usage_in_bytes")]
            return run_observer([self.floor, str(self.args.poll_ms), str(self.args.seconds)]
                                + files, log, win)
        finally:
            if tree:
                os.killpg(tree.pid, signal.SIGKILL)
                tree.wait()
            for _ in range(500):
                try:
                    cg.rmdir()
                    break
                except OSError as e:
                    err = e
                    time.sleep(0.01)
            else:
                print(f"memsup_cpu: the read floor's cgroup {cg} could not be removed "
                      f"({err.strerror}): remove it by hand", file=sys.stderr)

    def one(self, who, n, rep):
        outdir = self.tmp / f"{who}-{n}-{rep}"
        log = self.tmp / f"{who}-{n}-{rep}.log"
        # the steady window: from 1.5 s (the start done, the sparse
        # interval lengthened) to 0.5 s before the tree ends
        win = (1.5, self.args.seconds - 0.5) if self.args.seconds >= 3 else None
        if who == "floor-reads":
            r = self.reads_floor(n, log, win)
            if r is None:
                return {"rc": 0, "cpu_s": None, "samples": None, "steady": None,
                        "wall_s": self.args.seconds, "mode": "no v1 memory cgroup"}
            r["cpu_s"] = r["sched_s"] if r["sched_s"] is not None else r["stat_s"]
            r["wall_s"] = self.args.seconds
            r["samples"] = int(self.args.seconds * 1000 / self.args.poll_ms)
            r["mode"] = "v1 reads"
            for k in ("peak_tree_rss_mb", "max_processes", "sampling"):
                r[k] = None
            return r
        if who == "seed":
            argv = self.seed_argv(outdir, n)
        elif who.startswith("floor"):
            argv = [self.floor, str(n), str(self.args.seconds)]
        else:
            argv = self.memsup_argv(outdir, n, children=(who == "memsup-children"),
                                    scan=(who == "memsup-scan"),
                                    dense=who in ("memsup-dense", "memsup-before-dense"),
                                    binary=(self.args.before if who.startswith("memsup-before")
                                            else None))
        r = run_observer(argv, log, win)
        rec = {}
        try:
            rec = json.loads((outdir / "resources.json").read_text())
        except (OSError, ValueError):
            pass
        r["wall_s"] = rec.get("wall_s") or r["driver_wall"]
        r["peak_tree_rss_mb"] = rec.get("peak_tree_rss_mb")
        r["max_processes"] = rec.get("max_processes")
        r["samples"] = rec.get("samples")
        r["mode"] = (rec.get("containment") or {}).get("mode", rec.get("discovery"))
        r["sampling"] = rec.get("sampling")
        if r["samples"] is None and (outdir / "rss.jsonl").exists():
            r["samples"] = sum(1 for _ in open(outdir / "rss.jsonl"))
        if who == "seed":
            try:
                r["cpu_in_measure"] = json.loads(log.read_text().strip().splitlines()[-1])[
                    "cpu_in_measure"]
            except (OSError, ValueError, IndexError, KeyError):
                r["cpu_in_measure"] = None
        r["cpu_s"] = r["sched_s"] if (r["sched_s"] is not None and r["threads"] <= 1) \
            else r["stat_s"]
        if self.args.verbose:
            print(f"rep {rep + 1} {who:11s} N={n:<4d} cpu {r['cpu_s']:.4f}s "
                  f"(ticks {r['stat_s']:.2f}s, threads {r['threads']}) wall {r['wall_s']:.2f}s "
                  f"rc {r['rc']}", file=sys.stderr)
        return r

    def run(self):
        who = []
        if self.memsup:
            who.append("memsup")
            if "--cgroup" in self.help and self.args.scan:
                who.append("memsup-scan")
            # memsup's default discovery is the ppid scan of /proc; the
            # children files are the other way: time both when memsup has both.
            if "--discovery" in self.help and "children" in self.help and self.args.alt:
                who.append("memsup-children")
            if self.args.dense:
                who.append("memsup-dense")
                who.append("floor-reads")
            if self.args.before:
                who.append("memsup-before")
                if self.args.dense:
                    who.append("memsup-before-dense")
        if self.seed and self.args.seed_run:
            who.append("seed")
        res = {n: {w: [] for w in who} for n in self.args.trees}
        floor = {ms: [] for ms in self.args.floor_ms}
        self.start_unrelated()
        try:
            for rep in range(self.args.reps):
                for n in self.args.trees:
                    k = rep % len(who)
                    order = who[k:] + who[:k]
                    for w in order:
                        res[n][w].append(self.one(w, n, rep))
                for ms in self.args.floor_ms:
                    floor[ms].append(self.one(f"floor{ms}", ms, rep))
        finally:
            self.stop_unrelated()
        res["floor"] = floor
        return who, res


def per_sample_us(runs):
    """Median CPU per sample, microseconds (the observer's whole CPU over its
    samples: the per-second record writes and the start are in it)."""
    v = [1e6 * r["cpu_s"] / r["samples"] for r in runs if r.get("samples")]
    return benchlib.summary(v)[0] if v else None


def floor_wake_us(fl, ms, seconds):
    """Median CPU per wake of wake_floor, microseconds."""
    return benchlib.summary([1e6 * r["cpu_s"] / (seconds * 1000 / ms) for r in fl])[0]


def verdicts(b, who, res):
    """The checks of sampling that follows the memory, each with its count
    and its verdict."""
    out = []
    floors = res.get("floor", {})
    dense_ms = b.args.poll_ms
    if floors.get(dense_ms) and "memsup-dense" in who:
        fw = floor_wake_us(floors[dense_ms], dense_ms, b.args.seconds)
        for w in ("memsup-dense", "memsup-before-dense"):
            for n in (1, 10):
                if n in res and res[n].get(w):
                    ups = per_sample_us(res[n][w])
                    x = ups / fw if fw else float("inf")
                    out.append(f"- CPU per sample, N={n}, {w}: {ups:.0f} us, {x:.2f}x the bare "
                               f"wake's {fw:.0f} us (target <= 1.5x): "
                               f"**{'met' if x <= 1.5 else 'not met'}**")
    # the same in the steady window (start and end left out on both sides):
    # held dense, every sample is due at --poll-ms, as every wake of the floor
    if floors.get(dense_ms) and "memsup-dense" in who:
        sw = steady_pct(floors[dense_ms])
        for w in ("memsup-dense", "memsup-before-dense"):
            for n in (1, 10, 100):
                sm = steady_pct(res[n].get(w) or []) if n in res else None
                if sm is None or not sw:
                    continue
                ups = sm / 100 * dense_ms * 1000
                fw = sw / 100 * dense_ms * 1000
                out.append(f"- CPU per sample, steady window, N={n}, {w}: {ups:.0f} us, "
                           f"{ups / fw:.2f}x the bare wake's {fw:.0f} us (target <= 1.5x for "
                           f"N=1 and 10): **{'met' if ups / fw <= 1.5 else 'not met'}**")
    # against the floor of the reads themselves, in the same steady window
    if floors.get(dense_ms) and "floor-reads" in who:
        sw = steady_pct(floors[dense_ms])
        for n in (1, 10, 100):
            fr = steady_pct(res[n].get("floor-reads") or []) if n in res else None
            if fr is None or not sw:
                continue
            rw = fr / 100 * dense_ms * 1000
            fw = sw / 100 * dense_ms * 1000
            line = (f"- the read floor, steady window, N={n}: a wake and the {n + 2} reads "
                    f"a dense sample makes, {rw:.0f} us, {rw / fw:.2f}x the bare wake's "
                    f"{fw:.0f} us")
            for w in ("memsup-dense", "memsup-before-dense"):
                sm = steady_pct(res[n].get(w) or [])
                if sm is not None:
                    ups = sm / 100 * dense_ms * 1000
                    line += f"; {w} {ups:.0f} us, {ups / rw:.2f}x the read floor"
            out.append(line)
    ns = sorted(n for n in res if n != "floor" and n > 1 and 1 in res)
    for w in ("memsup-dense", "memsup-before-dense"):
        if w not in who:
            continue
        for n in ns:
            a, z = per_sample_us(res[1][w]), per_sample_us(res[n][w])
            if a and z:
                out.append(f"- per-process part of a sample ({w}), N={n}: "
                           f"({z:.0f} - {a:.0f}) / {n - 1} = {(z - a) / (n - 1):.1f} us a process")
    if floors.get(100) and "memsup" in who:
        f10 = benchlib.summary([100 * r["cpu_s"] / r["wall_s"] for r in floors[100]])[0]
        for n in sorted(k for k in res if k != "floor"):
            runs = res[n].get("memsup") or []
            if not runs:
                continue
            pm = benchlib.summary([100 * r["cpu_s"] / r["wall_s"] for r in runs])[0]
            ad = sorted({str((r.get("sampling") or {}).get("adaptive")) for r in runs})
            out.append(f"- idle tree N={n}, default memsup (adaptive {'/'.join(ad)}), whole run: "
                       f"{pm:.3f}% of a core against a bare 10 Hz wake's {f10:.3f}% "
                       f"(target: no more): **{'met' if pm <= f10 else 'not met'}** "
                       f"({pm / f10:.2f}x)")
        s10 = steady_pct(floors[100])
        for n in sorted(k for k in res if k != "floor"):
            for w in ("memsup", "memsup-before"):
                sm = steady_pct(res[n].get(w) or [])
                if sm is None or s10 is None:
                    continue
                out.append(f"- idle tree N={n}, {w} (default), steady (from 1.5 s to 0.5 s "
                           f"before the end): {sm:.3f}% of a core against the bare 10 Hz "
                           f"wake's {s10:.3f}% in the same window (target: no more): "
                           f"**{'met' if sm <= s10 else 'not met'}** ({sm / s10:.2f}x)")
    return "\n".join(out)


def steady_pct(runs):
    """Median CPU share in the steady window, % of a core, or None."""
    v = [100 * r["steady"]["cpu_s"] / (r["steady"]["to_s"] - r["steady"]["from_s"])
         for r in runs if r.get("steady")]
    return benchlib.summary(v)[0] if v else None


def render(b, who, res, argv):
    lines = [f"Command: `{benchlib.shell_quote(argv)}`  ",
             f"memsup: `{b.memsup_argv('DIR', 'N')[0]} "
             + benchlib.shell_quote(b.memsup_argv('DIR', 'N')[1:]) + "`"
             + (" (memsup-children: the same with `--discovery children`, reading "
                "/proc/PID/task/TID/children instead of the default ppid scan)"
                if "memsup-children" in who else "")
             + (" (`--no-trace`: only the poller is measured)" if b.memsup_extra else
                " (this memsup has no `--no-trace`)") + "  ",
             f"seed: `{Path(sys.executable).name} -c 'measure_command([sleep_tree, N, "
             f"{b.args.seconds}], DIR)'` with `{b.seed}/seed_measure.py`, Python "
             f"{sys.version.split()[0]}  ",
             f"Repetitions: {b.args.reps} per cell, interleaved; tree runs {b.args.seconds} s; "
             f"medians shown (min-max in brackets)."
             + (f" {b.args.unrelated} unrelated idle processes alive throughout."
                if b.args.unrelated else "")
             + (" memsup-scan: the same memsup with `--cgroup off` (the /proc scan)."
                if "memsup-scan" in who else ""), ""]
    header = ["tree", "observer", "mode", "CPU s", "% of one core (min-max)", "steady %",
              "seed / this", "processes seen", "peak tree RSS MB", "samples/s",
              "us CPU per sample"]
    rows = []
    for n, per in res.items():
        if n == "floor":
            continue
        seed_in = None
        if "seed" in who:
            vals = [100 * r["cpu_in_measure"] / r["wall_s"] for r in per["seed"]
                    if r.get("cpu_in_measure") is not None]
            seed_in = benchlib.summary(vals) if vals else None
        for w in who:
            runs = per[w]
            cm = benchlib.summary([r["cpu_s"] for r in runs])
            pm = benchlib.summary([100 * r["cpu_s"] / r["wall_s"] for r in runs])
            # The ratio uses seed_measure.py's CPU inside measure_command
            # (without the interpreter's start-up) against memsup's whole
            # life: the conservative comparison.
            ratio = f"**{seed_in[0] / pm[0]:.1f}x**" if (w != "seed" and seed_in and pm[0] > 0) \
                else "-"
            mp = [r["max_processes"] for r in runs if r["max_processes"] is not None]
            rss = [r["peak_tree_rss_mb"] for r in runs if r["peak_tree_rss_mb"] is not None]
            sps = [r["samples"] / r["wall_s"] for r in runs if r["samples"]]
            modes = sorted({str(r.get("mode")) for r in runs if r.get("mode")})
            ups = per_sample_us(runs)
            st = steady_pct(runs)
            rows.append([str(n), w, "/".join(modes) or "-", f"{cm[0]:.3f}",
                         f"**{pm[0]:.2f}%** ({pm[1]:.2f}-{pm[2]:.2f})",
                         f"{st:.3f}%" if st is not None else "-", ratio,
                         str(max(mp)) if mp else "-",
                         f"{benchlib.summary(rss)[0]:.1f}" if rss else "-",
                         f"{benchlib.summary(sps)[0]:.0f}" if sps else "-",
                         f"{ups:.0f}" if ups else "-"])
            if w == "seed" and seed_in:
                rows.append([str(n), "seed, inside measure_command", "-", "-",
                             f"{seed_in[0]:.2f}% ({seed_in[1]:.2f}-{seed_in[2]:.2f})",
                             "-", "-", "-", "-", "-", "-"])
    for ms, fl in sorted(res.get("floor", {}).items()):
        if not fl:
            continue
        pm = benchlib.summary([100 * r["cpu_s"] / r["wall_s"] for r in fl])
        st = steady_pct(fl)
        rows.append(["-", f"floor: `wake_floor {ms} {b.args.seconds}`", "-",
                     f"{benchlib.summary([r['cpu_s'] for r in fl])[0]:.3f}",
                     f"**{pm[0]:.2f}%** ({pm[1]:.2f}-{pm[2]:.2f})",
                     f"{st:.3f}%" if st is not None else "-", "-", "-", "-",
                     f"{1000 / ms:.0f}", f"{floor_wake_us(fl, ms, b.args.seconds):.0f}"])
    lines.append(benchlib.md_table(header, rows))
    lines += ["", verdicts(b, who, res)]
    bad = [(n, w, r["rc"]) for n, per in res.items() for w in per for r in per[w] if r["rc"] != 0]
    if bad:
        lines += ["", "Runs that did not exit 0: " + ", ".join(f"{w} N={n} rc={rc}"
                                                             for n, w, rc in bad)]
    return "\n".join(lines)


def spike_check(b, runs):
    """The spike scenario, `runs` times: memsup on `spike 100 50 0 0
    1000` (asleep for 1 s, then 100 MB mapped and touched, held 50 ms,
    freed), traced, as by default.  Per run: whether the kernel's threshold
    woke memsup, whether a sample's per-process view held the spiking pid at
    90 MB or more, and how long after the rise the first rising sample was
    read: 1 MB above the last flat one in the tree's RSS or in the cgroup's
    usage (the kernel charges a huge page as its fault begins and the RSS
    counts it once the page is zeroed, on this machine milliseconds later;
    the RSS alone is reported beside it), from the evidence: the rise begins
    when the mapping is made, which the shim stamps on memsup's clock
    (processes.json's record, total.peak_mono_ns: the 100 MB are counted as the
    mmap returns, before the first page is touched) or, when a sample after
    it still read the flat level (the process descheduled before its first
    touch), that sample's t; a sample's t is stamped after its reading, so
    t_first minus the later of the two bounds the delay from above (up to
    that flat sample's own reading, a fraction of a ms).  Runs this memsup,
    the same held dense by --rss-mb, and --before's binary when given."""
    spike = str(Path(b.builddir or ".") / "tests" / "progs" / "spike")
    out = [spike_runs(b, runs, spike, b.memsup, "default", False),
           spike_runs(b, runs, spike, b.memsup, "dense", True)]
    if b.args.before:
        out.append(spike_runs(b, runs, spike, b.args.before, "before (default)", False))
    return "\n".join(out)


def total_peak_at_s(p):
    """When an image's heap and mappings peaked, in run seconds, from its
    processes.json entry: the record's total.peak_mono_ns against the run's
    launch on that clock (start_mono_ns - start_s; common/recordjson.h), or
    a memsup before that layout's flat total_peak_at_s."""
    r = p.get("record") or {}
    if "total_peak_at_s" in r:
        return r["total_peak_at_s"]
    t = (r.get("total") or {}).get("peak_mono_ns")
    if not t or p.get("start_s") is None or not r.get("start_mono_ns"):
        return None
    launch_ns = r["start_mono_ns"] - p["start_s"] * 1e9
    return (t - launch_ns) / 1e9


def spike_delay(tl, rise, keys):
    """The bound on the delay, in ms, from the rise to the first sample whose
    figures under `keys` read it (one of them 1 MB above the last sample
    before the mapping), and that sample's index; (None, None) if none did.
    The process may be descheduled between its mmap and its first touch: a
    later sample with every figure still at the flat level moves the rise."""
    if rise is None or not tl:
        return None, None
    flat = [t for t in tl if t["t"] < rise]
    base = flat[-1] if flat else tl[0]

    def above(t, by):
        return [t.get(k, 0) > base.get(k, 0) + by for k in keys]
    first = next((k for k, t in enumerate(tl) if t["t"] >= rise and any(above(t, 1e6))), None)
    if first is None or first == 0:
        return None, None
    still = [t["t"] for t in tl[:first] if t["t"] >= rise and not any(above(t, 0.25e6))]
    return 1000 * (tl[first]["t"] - max([rise] + still)), first


def spike_runs(b, runs, spike, binary, label, dense):
    """spike_check's runs of one memsup binary: its default, or held dense by
    --rss-mb 1000000 (every sample at --poll-ms) for comparison."""
    lines, ok_wake, ok_view, lat, lat_rss = [f"memsup {label}:"], 0, 0, [], []
    delay_s = 1.0
    for i in range(runs):
        out = b.tmp / f"spike-{label.split()[0]}-{i}"
        argv = [str(binary), "-q", "-o", str(out), "--poll-ms", str(b.args.poll_ms)] + \
            (["--rss-mb", "1000000"] if dense else []) + \
            ["--", spike, "100", "50", "0", "0", str(int(delay_s * 1000))]
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        try:
            rec = json.loads((out / "resources.json").read_text())
            tl = [json.loads(x) for x in open(out / "timeline.jsonl")]
            procs = json.loads((out / "processes.json").read_text())
        except (OSError, ValueError):
            lines.append(f"run {i + 1}: no evidence")
            continue
        pid, samp = rec.get("pid"), rec.get("sampling") or {}
        rise = next((total_peak_at_s(p) for p in procs
                     if p.get("pid") == pid and p.get("record")), None)
        woke = samp.get("threshold_wakeups", 0) > 0
        view = max([t["top"][0][1] for t in tl if t.get("top") and t["top"][0][0] == pid] or [0])
        bound, first = spike_delay(tl, rise, ("rss", "cgroup"))
        bound_rss, first_rss = spike_delay(tl, rise, ("rss",))
        ok_wake += woke
        ok_view += view >= 90e6
        if bound is not None:
            lat.append(bound)
        if bound_rss is not None:
            lat_rss.append(bound_rss)
        lines.append(f"run {i + 1}: threshold wake-ups {samp.get('threshold_wakeups')}, "
                     f"per-process view at the peak {view / 1e6:.1f} MB, first rising sample "
                     + (f"at t={tl[first]['t']:.4f} s (RSS {tl[first]['rss'] / 1e6:.1f} MB, "
                        f"cgroup {tl[first].get('cgroup', 0) / 1e6:.1f} MB), the one before at "
                        f"{tl[first - 1]['t']:.4f} s, the mapping made at {rise:.4f} s: read at "
                        f"most {bound:.1f} ms after the rise (by the RSS alone "
                        + (f"{bound_rss:.1f} ms" if bound_rss is not None else "none") + ")"
                        if bound is not None else "none")
                     + f"; samples {rec.get('samples')}")
    within = sum(1 for x in lat if x <= 10)
    within_rss = sum(1 for x in lat_rss if x <= 10)

    def span(xs):
        return f"{min(xs):.1f}-{max(xs):.1f}" if xs else "none"
    lines.append(f"- spike ({label}): woken by the kernel in {ok_wake} of {runs}; per-process "
                 f"view at the peak in {ok_view} of {runs}; first rising sample at most 10 ms "
                 f"after the rise in {within} of {runs} (bounds {span(lat)} ms; by the RSS "
                 f"alone {within_rss} of {runs}, {span(lat_rss)} ms): "
                 f"**{'met' if ok_view == runs and within == runs else 'not met'}**")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir")
    ap.add_argument("--memsup", help="memsup binary (default: BUILDDIR/supervisor/memsup)")
    ap.add_argument("--seed", help="directory holding seed_measure.py")
    ap.add_argument("--trees", type=lambda s: [int(x) for x in s.split(",")],
                    default=[1, 10, 100])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--poll-ms", type=int, default=10)
    ap.add_argument("--no-children", dest="alt", action="store_false",
                    help="do not time memsup --discovery children")
    ap.add_argument("--no-scan", dest="scan", action="store_false",
                    help="do not time memsup --cgroup off beside the default")
    ap.add_argument("--unrelated", type=int, default=0,
                    help="idle processes kept alive outside the trees (needs pids-guard.sh)")
    ap.add_argument("--dense", action="store_true",
                    help="also time this memsup held dense (--rss-mb 1000000)")
    ap.add_argument("--before", help="another memsup binary to time with the same arguments")
    ap.add_argument("--floor-ms", type=lambda s: [int(x) for x in s.split(",")],
                    default=None, help="wake_floor periods (default: --poll-ms)")
    ap.add_argument("--no-seed", dest="seed_run", action="store_false",
                    help="do not time seed_measure.py's measure_command")
    ap.add_argument("--spike", type=int, default=0,
                    help="also run the 50 ms spike scenario this many times")
    ap.add_argument("--json")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    # the default trees (1, 10, 100) stay small; a larger one is a process
    # count the machine must be fenced against
    if max(args.trees) > 100:
        benchlib.require_pids_guard("memsup_cpu", f"--trees {max(args.trees)}")
    if args.floor_ms is None:
        args.floor_ms = [args.poll_ms]
    b = Bench(args)
    if not b.memsup:
        print("memsup_cpu: no memsup binary found (build it, or pass --memsup)", file=sys.stderr)
    if not b.seed:
        print("memsup_cpu: seed_measure.py not found (pass --seed)", file=sys.stderr)
    facts = benchlib.machine_facts()
    if args.spike:
        print(spike_check(b, args.spike))
        if args.reps == 0:
            return 0
    who, res = b.run()
    print(f"Run: {benchlib.facts_line(facts)}\n")
    print(render(b, who, res, ["python3", "bench/memsup_cpu.py"] +
                 (argv if argv is not None else sys.argv[1:])))
    if args.json:
        Path(args.json).write_text(json.dumps({"facts": facts, "results": res}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
