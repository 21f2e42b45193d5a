#!/usr/bin/env python3
"""shim_overhead.py: wall-time cost of libmemtrace.so next to glibc's memusage
and heaptrack, on the same workloads, in one interleaved run.

Variants (each one a whole command, timed from fork to reaping):
  bare           the workload alone
  forward        LD_PRELOAD of bench/forward_shim.c (built here with cc): a
                 malloc/calloc/realloc/free that only call the C library's,
                 the floor of any preloaded tool; the distance from it to
                 memtrace is the shim's accounting, not the interposition
  memtrace       LD_PRELOAD=libmemtrace.so MEMTRACE_QUIET=1 (counters, and
                 call sites sampled at the default 512 KiB)
  memtrace-nosample  the same with MEMTRACE_SAMPLE_BYTES=0 (counters only)
  memtrace-baseline  another libmemtrace.so (--baseline-shim, an earlier
                 build) as memtrace runs this one: before and after in one run
  memtrace-dir   the same plus MEMTRACE_DIR=<fresh dir>: one mapped record file
                 per process, the mode memsup uses
  memusage       LD_PRELOAD=libmemusage.so (what the `memusage` script does when
                 given no options: summary on stderr at exit)
  heaptrack      the `heaptrack` command as a user runs it: a shell script that
                 preloads libheaptrack_preload.so and runs heaptrack_interpret
                 and zstd/gzip beside the program, through a FIFO
  heaptrack-raw  LD_PRELOAD=libheaptrack_preload.so with DUMP_HEAPTRACK_OUTPUT
                 set to a file: only the in-process cost, data left raw (a lower
                 bound for heaptrack; not a usable profile without the
                 interpreter)

Workloads:
  malloc-1t  bench/malloc_bench 1       (10 M mixed-size malloc/free, 1 thread)
  malloc-2t  bench/malloc_bench 2       (the same per thread, 2 threads)
  python     python3 building and dropping six dicts of 300 000 entries
  gcc        gcc -O2 -c on the project's 6 largest C sources (one cc1 and one
             as per file: a tree of 13 processes)

Every repetition runs every workload under every variant, in an order that
rotates by one per repetition, so slow drift of a shared machine hits all
variants alike.  The table shows the median wall time over the repetitions,
min and max, the ratio of medians to bare, the paired ratio (median over
repetitions of the run's time over bare's time in the same repetition), and
the ratio of the fastest runs (the run least disturbed by neighbours).  CPU time (user+sys of the whole
tree, from RUSAGE_CHILDREN) is reported too: heaptrack's interpreter runs on
the other core, which the wall time hides.

stdout and stderr of every run go to a file that is thrown away (memusage and
heaptrack print summaries; all variants pay for that redirection alike).
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean (distcheck, git status)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

PY_DICTS = (
    "for r in range(6):\n"
    "    d = {i: (i, str(i)) for i in range(300000)}\n"
    "    del d\n"
)

ALL_VARIANTS = ["bare", "forward", "memtrace", "memtrace-nosample", "memtrace-dir", "memusage", "heaptrack",
                "heaptrack-raw"]
ALL_WORKLOADS = ["malloc-1t", "malloc-2t", "python", "gcc"]


def gcc_flags(builddir):
    flags = ["-O2", "-c", "-w"]
    if builddir is not None and (builddir / "config.h").exists():
        flags += ["-include", str(builddir / "config.h")]
    return flags + ["-I", str(benchlib.SRC_DIR / "common"),
                   "-I", str(benchlib.SRC_DIR / "preload"),
                    "-I", str(benchlib.SRC_DIR / "supervisor")]


_GCC_SOURCES = None


def default_gcc_sources(builddir=None, count=6):
    """The project's own largest C sources (real code, what `make` compiles):
    the `count` largest of preload/ and supervisor/ that compile, or the bench
    programs when the project's are still placeholders."""
    global _GCC_SOURCES
    if _GCC_SOURCES is not None:
        return _GCC_SOURCES
    cands = sorted((p for d in ("common", "preload", "supervisor") for p in (benchlib.SRC_DIR / d).rglob("*.c")),
                   key=lambda p: (-p.stat().st_size, p.name))
    chosen = []
    with tempfile.TemporaryDirectory() as d:
        for p in cands:
            if len(chosen) == count:
                break
            r = subprocess.run(["gcc"] + gcc_flags(builddir) + [str(p)], cwd=d,
                               capture_output=True)
            if r.returncode == 0:
                chosen.append(p)
    if sum(p.stat().st_size for p in chosen) < 20000:
        chosen = sorted(benchlib.BENCH_DIR.glob("*.c"))
    _GCC_SOURCES = chosen
    return chosen


class Runner:
    def __init__(self, args):
        self.args = args
        self.builddir = benchlib.find_builddir(args.builddir)
        self.shim = Path(args.shim) if args.shim else benchlib.shim_path(self.builddir)
        self.memusage = benchlib.first_existing(benchlib.LIBMEMUSAGE_CANDIDATES)
        self.heaptrack = benchlib.which("heaptrack")
        self.ht_preload = benchlib.first_existing(benchlib.HEAPTRACK_PRELOAD_CANDIDATES)
        self.tmp = Path(tempfile.mkdtemp(prefix="mt-overhead-"))
        self.python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
        self.gcc_sources = [Path(s).resolve() for s in args.gcc_source] if args.gcc_source \
            else default_gcc_sources(self.builddir)
        self.gcc_flags = gcc_flags(self.builddir)
        self.forward = None

    def forward_shim(self):
        """bench/forward_shim.c built into the scratch directory (once), or
        None when no compiler can build it."""
        if self.forward is None:
            out = self.tmp / "libforward.so"
            r = subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-o", str(out),
                                str(benchlib.BENCH_DIR / "forward_shim.c"), "-ldl"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"shim_overhead: cannot build forward_shim.c: {r.stderr.strip()}",
                      file=sys.stderr)
                out = ""
            self.forward = out
        return self.forward or None

    # -- what is available -------------------------------------------------
    def variants(self):
        avail = []
        for v in self.args.variants:
            if v == "memtrace-baseline" and not self.args.baseline_shim:
                print("shim_overhead: no --baseline-shim: skipping memtrace-baseline", file=sys.stderr)
            elif v.startswith("memtrace") and not self.shim:
                print(f"shim_overhead: no libmemtrace.so: skipping {v}", file=sys.stderr)
            elif v == "forward" and not self.forward_shim():
                print("shim_overhead: skipping forward", file=sys.stderr)
            elif v == "memusage" and not self.memusage:
                print("shim_overhead: no libmemusage.so: skipping memusage", file=sys.stderr)
            elif v == "heaptrack" and not self.heaptrack:
                print("shim_overhead: no heaptrack: skipping", file=sys.stderr)
            elif v == "heaptrack-raw" and not self.ht_preload:
                print("shim_overhead: no libheaptrack_preload.so: skipping", file=sys.stderr)
            else:
                avail.append(v)
        return avail

    def workload(self, name):
        """(argv, cwd) of a workload."""
        if name.startswith("malloc-"):
            mb = benchlib.bench_program(self.builddir, "malloc_bench")
            threads = name[len("malloc-"):-1]
            return [str(mb), threads, str(self.args.ops)], None
        if name == "python":
            return [self.python, "-c", PY_DICTS], None
        if name == "gcc":
            cwd = self.tmp / "gcc-out"
            cwd.mkdir(exist_ok=True)
            return ["gcc"] + self.gcc_flags + [str(s) for s in self.gcc_sources], cwd
        raise ValueError(name)

    def command(self, variant, argv, scratch):
        """(argv, env) of one variant of one workload; scratch is a fresh dir."""
        env = dict(os.environ)
        for k in ("LD_PRELOAD", "MEMTRACE_DIR", "MEMTRACE_OUT", "MEMTRACE_QUIET",
                  "MEMTRACE_SAMPLE_BYTES", "MEMUSAGE_OUTPUT", "MEMUSAGE_TRACE_MMAP",
                  "DUMP_HEAPTRACK_OUTPUT"):
            env.pop(k, None)
        if variant == "bare":
            return argv, env
        if variant == "forward":
            env.update(LD_PRELOAD=str(self.forward_shim()))
            return argv, env
        if variant == "memtrace":
            env.update(LD_PRELOAD=str(self.shim), MEMTRACE_QUIET="1")
            return argv, env
        if variant == "memtrace-nosample":
            env.update(LD_PRELOAD=str(self.shim), MEMTRACE_QUIET="1", MEMTRACE_SAMPLE_BYTES="0")
            return argv, env
        if variant == "memtrace-dir":
            env.update(LD_PRELOAD=str(self.shim), MEMTRACE_QUIET="1", MEMTRACE_DIR=str(scratch))
            return argv, env
        if variant == "memtrace-baseline":
            env.update(LD_PRELOAD=str(self.args.baseline_shim), MEMTRACE_QUIET="1")
            return argv, env
        if variant == "memusage":
            env.update(LD_PRELOAD=self.memusage)
            return argv, env
        if variant == "heaptrack":
            return [self.heaptrack, "-o", str(scratch / "ht")] + argv, env
        if variant == "heaptrack-raw":
            env.update(LD_PRELOAD=self.ht_preload, DUMP_HEAPTRACK_OUTPUT=str(scratch / "ht.raw"))
            return argv, env
        raise ValueError(variant)

    def run_once(self, variant, wname):
        argv, cwd = self.workload(wname)
        scratch = Path(tempfile.mkdtemp(dir=self.tmp, prefix=f"{variant}-"))
        cmd, env = self.command(variant, argv, scratch)
        log = scratch / "out.log"
        with open(log, "wb") as out:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
            wall = time.perf_counter() - t0
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        loop_s = None
        if wname.startswith("malloc-"):
            for line in log.read_text(errors="replace").splitlines():
                if line.startswith("{\"threads\""):
                    loop_s = json.loads(line)["loop_s"]
        ok = proc.returncode == 0
        if not ok:
            print(f"shim_overhead: {variant} {wname} exited {proc.returncode}; log kept in {log}",
                  file=sys.stderr)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
        return {"wall": wall, "cpu": cpu, "loop_s": loop_s, "rc": proc.returncode}

    # -- the run -------------------------------------------------------------
    def run(self):
        variants = self.variants()
        workloads = self.args.workloads
        results = {w: {v: [] for v in variants} for w in workloads}
        # warm-up: page cache, gcc's binaries, python's .pyc; not recorded
        for w in workloads:
            self.run_once("bare", w)
        n = len(variants)
        for rep in range(self.args.reps):
            for w in workloads:
                order = variants[rep % n:] + variants[:rep % n]
                for v in order:
                    r = self.run_once(v, w)
                    results[w][v].append(r)
                    if self.args.verbose:
                        print(f"rep {rep + 1} {w:10s} {v:13s} {r['wall']:.3f}s", file=sys.stderr)
        shutil.rmtree(self.tmp, ignore_errors=True)
        return variants, results


def render(runner, variants, results, argv):
    args = runner.args
    lines = []
    lines.append(f"Command: `{benchlib.shell_quote(argv)}`  ")
    lines.append(f"Repetitions: {args.reps}, interleaved round-robin (order rotates each "
                 f"repetition); malloc_bench ops per thread: {args.ops}.  ")
    lines.append(f"python: `{runner.python}` (building and dropping six 300 000-entry dicts).  ")
    lines.append("gcc: `gcc " + " ".join(a if not a.startswith("/") else Path(a).name
                                          for a in runner.gcc_flags)
                 + " " + " ".join(str(s.relative_to(benchlib.SRC_DIR))
                                  if str(s).startswith(str(benchlib.SRC_DIR)) else str(s)
                                  for s in runner.gcc_sources) + "`  ")
    lines.append(f"Shim: `{runner.shim}`; memusage: `{runner.memusage}`; "
                 f"heaptrack: `{runner.heaptrack}` / `{runner.ht_preload}`")
    lines.append("")
    for w, per in results.items():
        bare = per.get("bare")
        bare_med = benchlib.summary([r["wall"] for r in bare])[0] if bare else None
        bare_cpu = benchlib.summary([r["cpu"] for r in bare])[0] if bare else None
        bare_min = min(r["wall"] for r in bare) if bare else None
        bare_loop = None
        if bare and bare[0]["loop_s"] is not None:
            bare_loop = benchlib.summary([r["loop_s"] for r in bare])[0]
        header = ["variant", "median wall s", "min", "max", "wall / bare",
                  "paired ratio", "min / bare min", "median CPU s", "CPU / bare"]
        if bare_loop is not None:
            header += ["median loop s", "loop / bare"]
        rows = []
        for v in variants:
            runs = per[v]
            failed = sum(1 for r in runs if r["rc"] != 0)
            med, lo, hi = benchlib.summary([r["wall"] for r in runs])
            cmed = benchlib.summary([r["cpu"] for r in runs])[0]
            # paired: the median over repetitions of (this run / bare's run
            # of the same repetition), which cancels drift slower than a round
            paired = benchlib.summary([r["wall"] / b["wall"] for r, b in zip(runs, bare)])[0] \
                if bare else None
            row = [v + (f" ({failed} failed)" if failed else ""), f"{med:.3f}", f"{lo:.3f}",
                   f"{hi:.3f}", f"**{med / bare_med:.3f}x**" if bare_med else "-",
                   f"{paired:.3f}x" if paired else "-",
                   f"{lo / bare_min:.3f}x" if bare_min else "-",
                   f"{cmed:.3f}", f"{cmed / bare_cpu:.2f}x" if bare_cpu else "-"]
            if bare_loop is not None:
                loops = [r["loop_s"] for r in runs if r["loop_s"] is not None]
                if loops:
                    lmed = benchlib.summary(loops)[0]
                    row += [f"{lmed:.3f}", f"{lmed / bare_loop:.3f}x"]
                else:
                    row += ["-", "-"]
            rows.append(row)
        lines.append(f"#### {w}")
        lines.append("")
        lines.append(benchlib.md_table(header, rows))
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir", help="configured build directory (default: $MEMTRACE_BUILDDIR or .)")
    ap.add_argument("--shim", help="libmemtrace.so to use (default: BUILDDIR/preload/.libs/)")
    ap.add_argument("--baseline-shim", metavar="PATH",
                    help="another libmemtrace.so (an earlier build), run as variant "
                         "memtrace-baseline, defaults as shipped")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--ops", type=int, default=10000000, help="malloc_bench ops per thread")
    ap.add_argument("--variants", type=lambda s: s.split(","), default=ALL_VARIANTS)
    ap.add_argument("--workloads", type=lambda s: s.split(","), default=ALL_WORKLOADS)
    ap.add_argument("--gcc-source", action="append", help="C file for the gcc workload (repeatable)")
    ap.add_argument("--json", help="write the raw per-run data here")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.baseline_shim and not Path(args.baseline_shim).is_file():
        raise SystemExit(f"--baseline-shim {args.baseline_shim!r}: no such file")
    unknown = [v for v in args.variants if v not in ALL_VARIANTS + ["memtrace-baseline"]]
    if unknown:
        raise SystemExit(f"--variants: unknown {', '.join(map(repr, unknown))} "
                         f"(known: {', '.join(ALL_VARIANTS + ['memtrace-baseline'])})")
    runner = Runner(args)
    facts = benchlib.machine_facts()
    variants, results = runner.run()
    text = render(runner, variants, results, ["python3", "bench/shim_overhead.py"] +
                  (argv if argv is not None else sys.argv[1:]))
    print(f"Run: {benchlib.facts_line(facts)}\n")
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"facts": facts, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
