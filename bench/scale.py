#!/usr/bin/env python3
"""scale.py: memsup on process-heavy runs.

Three workloads, each run bare and under memsup, interleaved round-robin
over --reps repetitions:

  procs   a /bin/sh loop of --procs runs of /bin/true: a run of many short
          processes, the shape of a big make or test suite with the work
          taken out.  Modes: bare, memsup --no-trace, memsup (traced).
  build   `make -jNPROC` of this project's own sources (a private copy,
          configured once; `make clean` before each build).  Modes: bare,
          memsup (traced: every gcc, cc1, as and ld of the build carries
          the shim).
  debian  the same for the upstream build of a Debian source package
          (--package, diffutils by default): fetched with `apt-get source` from
          the Debian archive this machine's apt already uses (a deb-src
          list of the same address, private to the run: the machine's apt
          setup is not touched), unpacked with dpkg-source, configured
          once; or an unpacked, configured tree given with --package-dir.
          A second real build beside this project's own, whose libtool
          scripts make it unusually rich in short processes.

"memsup, unstaged" is the traced mode with MEMSUP_STAGING_DIR=off: the
shim's files made in the evidence directory's records/ while the run goes
on instead of memsup's staging directory on /dev/shm (memsup(1),
"Staging"), so the cost of making two files per image on the scratch
directory's filesystem shows side by side.

With --sampling-off, each workload's traced mode runs once more with
MEMTRACE_SAMPLE_BYTES=0 in the command's environment ("memsup, sampling
off"): the shim counts but samples no call stacks (no unwinding, no stacks
files, no libgcc_s loaded where the unwinder is not linked into the shim),
so the share of sampling in the traced cost shows side by side.  --no-unstaged leaves the unstaged mode out.

With --split, the traced cost is taken apart: each workload also runs
under memsup without tracing ("memsup --no-trace": memsup's polling and
evidence alone) and with the shim alone, no memsup ("shim alone":
LD_PRELOAD=libmemtrace.so with MEMTRACE_DIR on --tmpfs-dir, or /dev/shm,
removed after each run; the shim's per-image start, hooks, sampling and
record files without anyone reading them).

With --baseline-shim PATH, each workload also runs with that
libmemtrace.so alone ("shim alone, baseline"), as "shim alone" runs this
build's: two shims side by side in one run, on a machine whose speed
drifts between runs.  --mode NAME (repeated) keeps only the named modes
(with "bare").

With --tmpfs-dir DIR (a tmpfs such as /dev/shm), each workload's traced
mode runs once more with its evidence directory there ("memsup,
tmpfs"), everything else alike: the cost of making one record file per
image on the temporary directory's own filesystem, side by side.

For each run: wall seconds; CPU seconds, user and system, of the whole
tree (memsup and every process of the run, all waited for: the work the
run made the machine do; on a VM that its host slows down, they stretch
with the clock, bench/RESULTS.md runs AZ and BA); the minor page faults of
the same tree, their median over bare's, and that per image of
processes.json (a count that the host's speed does not move: most of
what each traced image's start costs is faults; under `memsup
--no-trace`, whose processes.json lists only the images a poll saw, the
per-image figure is memsup's own faults spread over those); memsup's own CPU (the record's memsup_cpu_s);
the evidence directory's size (files plus directories, apparent bytes) and
that size per process image of processes.json; its disk usage (allocated
blocks); processes.json, records.fold and stacks.fold alone; `finish`, the seconds memsup ran after the run it
measured ended (its wall minus the record's wall_s: folding the last
records, the merge, processes.json, timeline.svg).  Medians, the wall
ratio of medians to bare, and the paired ratio (the median over
repetitions of a run's wall over bare's in the same repetition); the same
two ratios of the tree's CPU.  The
modes run in an order that rotates by one each repetition.

It refuses to run outside scripts/pids-guard.sh (a pids-limited cgroup of
its own), as bench/RESULTS.md's commands run it.

Usage: scripts/pids-guard.sh -- python3 bench/scale.py --builddir BUILD [--work procs,build,debian]
       [--procs 100000] [--reps 3] [--tmpfs-dir /dev/shm] [--sampling-off] [--no-unstaged] [--split]
       [--package diffutils | --package-dir DIR]
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402


def tree_bytes(path):
    """Apparent size and disk usage of a directory tree: its files and its
    directories."""
    total = disk = 0
    for root, dirs, files in os.walk(path):
        for p in [root] + [os.path.join(root, f) for f in files]:
            st = os.lstat(p)
            total += st.st_size
            disk += st.st_blocks * 512
    return total, disk


def children_usage():
    """(CPU seconds, minor page faults) of the waited-for children so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime, ru.ru_minflt


def run_one(argv, cwd=None, env=None):
    """Runs argv: {"wall": its seconds, "cpu": the CPU seconds of it and of
    every process of its tree that was waited for (all of them: make waits
    for its jobs, memsup reaps what is left), memsup's own included,
    "faults": their minor page faults, counted alike}."""
    cpu0, faults0 = children_usage()
    t0 = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"{argv[:6]}... exited {done.returncode}: {done.stderr[-2000:]}")
    cpu1, faults1 = children_usage()
    return {"wall": wall, "cpu": cpu1 - cpu0, "faults": faults1 - faults0}


def under_memsup(memsup, out, cmd, trace=True):
    argv = [str(memsup), "-q", "-o", str(out)]
    if not trace:
        argv.append("--no-trace")
    return argv + ["--"] + cmd


def evidence_figures(out, wall):
    rec = json.loads((out / "resources.json").read_text())
    procs = out / "processes.json"
    images = len(json.loads(procs.read_text())) if procs.exists() else 0
    size, disk = tree_bytes(out)
    fold = out / "records.fold"
    return {
        "memsup_cpu": rec["memsup_cpu_s"],
        "finish": wall - rec["wall_s"],
        "evidence": size,
        "disk": disk,
        "images": images,
        "per_image": size / images if images else None,
        "processes_json": procs.stat().st_size if procs.exists() else 0,
        "fold": fold.stat().st_size if fold.exists() else 0,
        "stacks_fold": (out / "stacks.fold").stat().st_size
        if (out / "stacks.fold").exists() else 0,
        "samples": rec.get("samples"),
    }


def out_dir(args, tmp, mode, stem):
    """Where a run's evidence goes: the scratch directory, or --tmpfs-dir
    for the "memsup, tmpfs" mode."""
    base = Path(args.tmpfs_dir) if mode == "memsup, tmpfs" else tmp
    return base / f"{stem}-{mode.replace(' ', '').replace(',', '-')}"


def round_robin(args, memsup, tmp, name, modes, cmd, cwd=None, before=None):
    """Runs cmd in each mode, --reps times interleaved: bare, or under
    memsup (traced unless the mode says --no-trace; "memsup, tmpfs" with
    its evidence on --tmpfs-dir; "memsup, unstaged" with
    MEMSUP_STAGING_DIR=off).  before() runs ahead of every run.
    {mode: [figures of each run]}."""
    res = {m: [] for m in modes}
    for rep in range(args.reps):
        # The order rotates by one each repetition, so that a machine that
        # drifts during the run slows every mode alike.
        for mode in modes[rep % len(modes):] + modes[:rep % len(modes)]:
            if before:
                before()
            out = out_dir(args, tmp, mode, f"{name}-{rep}")
            if mode == "bare":
                res[mode].append(run_one(cmd, cwd=cwd))
            elif mode == "shim alone":
                res[mode].append(shim_alone(args, out, cmd, cwd, args.shim))
            elif mode == "shim alone, baseline":
                res[mode].append(shim_alone(args, out, cmd, cwd, args.baseline_shim))
            else:
                trace = mode != "memsup --no-trace"
                env = dict(os.environ)
                if mode == "memsup, unstaged":
                    env["MEMSUP_STAGING_DIR"] = "off"
                if mode == "memsup, sampling off":
                    env["MEMTRACE_SAMPLE_BYTES"] = "0"
                times = run_one(under_memsup(memsup, out, cmd, trace=trace), cwd=cwd, env=env)
                fig = evidence_figures(out, times["wall"])
                fig.update(times)
                res[mode].append(fig)
                shutil.rmtree(out)
            print(f"# {name} rep {rep + 1}/{args.reps} {mode}: {res[mode][-1]}",
                  file=sys.stderr, flush=True)
    return res


def shim_alone(args, out, cmd, cwd, shim):
    """cmd with `shim` preloaded and no memsup: its records go to out
    (made on --tmpfs-dir or /dev/shm), counted, then removed."""
    out = Path(args.tmpfs_dir or "/dev/shm") / out.name
    out.mkdir()
    env = dict(os.environ, LD_PRELOAD=str(shim), MEMTRACE_DIR=str(out))
    try:
        times = run_one(cmd, cwd=cwd, env=env)
        images = sum(1 for f in out.iterdir() if f.name.endswith(".mtr"))
        size, disk = tree_bytes(out)
    finally:
        shutil.rmtree(out)
    return {**times, "images": images, "evidence": size, "disk": disk,
            "per_image": size / images if images else None}


def split_modes(args):
    """--split: the traced cost's two halves, beside it; --baseline-shim:
    another libmemtrace.so alone, beside this build's."""
    return (["memsup --no-trace", "shim alone"] if args.split else []) + \
        (["shim alone, baseline"] if args.baseline_shim else [])


def chosen(args, modes):
    """The modes --mode keeps (all by default), in their order."""
    return [m for m in modes if m in args.mode] if args.mode else modes


def traced_modes(args):
    """The traced modes beside plain "memsup" that the options ask for."""
    return ([] if args.no_unstaged else ["memsup, unstaged"]) + \
        (["memsup, sampling off"] if args.sampling_off else []) + \
        (["memsup, tmpfs"] if args.tmpfs_dir else [])


def bench_procs(args, memsup, tmp):
    script = (f"i=0; while [ $i -lt {args.procs} ]; do /bin/true; i=$((i+1)); done")
    return round_robin(args, memsup, tmp, "procs",
                       chosen(args, ["bare", "memsup --no-trace", "memsup"] + traced_modes(args) +
                              [m for m in split_modes(args) if m != "memsup --no-trace"]),
                       ["/bin/sh", "-c", script])


def bench_build(args, memsup, tmp):
    src = tmp / "src"
    files = subprocess.run(["git", "-C", str(benchlib.SRC_DIR), "ls-files", "-z"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for f in files:
        if not f:
            continue
        dst = src / f.decode()
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(benchlib.SRC_DIR / f.decode(), dst)
    subprocess.run("autoreconf -fi >/dev/null 2>&1 && ./configure --quiet >/dev/null",
                   shell=True, cwd=src, check=True)
    return parallel_make(args, memsup, tmp, "build", src)


def parallel_make(args, memsup, tmp, name, src):
    """`make -jNPROC` in the configured tree src, in each mode of a build,
    with `make clean` before every run."""
    jobs = str(os.cpu_count() or 2)

    def clean():
        subprocess.run(["make", "clean"], cwd=src, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return round_robin(args, memsup, tmp, name,
                       chosen(args, ["bare", "memsup"] + traced_modes(args) + split_modes(args)),
                       ["make", f"-j{jobs}"], cwd=src, before=clean)


WORKS = ("procs", "build", "debian")


def debian_src_stanza():
    """The deb-src stanza for the Debian archive that apt here already
    uses for binary packages (its first deb822 stanza of Types deb, not a
    security suite), or None."""
    for f in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        for stanza in f.read_text().split("\n\n"):
            fields = {}
            for line in stanza.splitlines():
                if ":" in line and not line.startswith(("#", " ")):
                    k, v = line.split(":", 1)
                    fields[k.strip()] = v.strip()
            suites = fields.get("Suites", "").split()
            if "deb" not in fields.get("Types", "").split() or not suites or \
                    suites[0].endswith("-security") or "URIs" not in fields:
                continue
            out = ["Types: deb-src", f"URIs: {fields['URIs']}", f"Suites: {suites[0]}",
                   f"Components: {fields.get('Components', 'main')}"]
            if "Signed-By" in fields:
                out.append(f"Signed-By: {fields['Signed-By']}")
            return "\n".join(out) + "\n"
    return None


def fetch_debian_source(package, tmp):
    """`apt-get source` of package into tmp/deb with a deb-src list and
    package lists of its own; the unpacked tree's path."""
    stanza = debian_src_stanza()
    if stanza is None:
        raise SystemExit("--work debian: no Debian archive in /etc/apt/sources.list.d/*.sources "
                         "to take a deb-src list from; use --package-dir with an unpacked tree")
    deb = tmp / "deb"
    (deb / "sources").mkdir(parents=True)
    (deb / "lists" / "partial").mkdir(parents=True)
    (deb / "sources" / "src.sources").write_text(stanza)
    apt = ["apt-get", "-q", "-o", "Dir::Etc::SourceList=/dev/null",
           "-o", f"Dir::Etc::SourceParts={deb / 'sources'}",
           "-o", f"Dir::State::Lists={deb / 'lists'}", "-o", "APT::Sandbox::User=root"]
    for step in (["update"], ["source", "--download-only", package]):
        done = subprocess.run(apt + step, cwd=deb, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"--work debian: apt-get {' '.join(step)} exited "
                             f"{done.returncode}: {done.stderr.strip()[-1000:]}")
    dsc = sorted(deb.glob("*.dsc"))
    if len(dsc) != 1:
        raise SystemExit(f"--work debian: apt-get source {package} left "
                         f"{len(dsc)} .dsc files in {deb}, expected one")
    src = deb / "src"
    subprocess.run(["dpkg-source", "--no-check", "-x", dsc[0].name, str(src)], cwd=deb,
                   check=True, stdout=subprocess.DEVNULL)
    print(f"source: {dsc[0].name} (apt-get source {package})")
    return src


def bench_debian(args, memsup, tmp):
    if args.package_dir:
        src = Path(args.package_dir).resolve()
        print(f"source: {src} (--package-dir, as it is)")
    else:
        src = fetch_debian_source(args.package, tmp)
        # GNU packages refuse to configure as root without it (a benchmark
        # machine often runs as root); the build is private and thrown away
        env = dict(os.environ, FORCE_UNSAFE_CONFIGURE="1")
        subprocess.run("./configure --quiet >/dev/null", shell=True, cwd=src, check=True,
                       env=env)
    return parallel_make(args, memsup, tmp, "debian", src)


def med(runs, key):
    vals = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}{unit}" if v < 100 else f"{v:.0f}{unit}"
    return f"{v}{unit}"


def table(name, res):
    bare = med(res["bare"], "wall")
    bare_cpu = med(res["bare"], "cpu")
    bare_faults = med(res["bare"], "faults")
    rows = [["mode", "wall s", "ratio", "paired", "CPU s", "CPU ratio", "CPU paired",
             "faults", "over bare", "over bare/image", "memsup CPU s", "finish s", "images",
             "evidence MB", "bytes/image", "disk MB", "processes.json MB",
             "records.fold MB", "stacks.fold MB"]]
    for mode, runs in res.items():
        w = med(runs, "wall")
        mb = lambda k: None if med(runs, k) is None else med(runs, k) / 1e6  # noqa: E731
        # each repetition's wall over bare's in the same repetition
        pairs = [r["wall"] / b["wall"] for r, b in zip(runs, res["bare"]) if b["wall"]]
        cpu = med(runs, "cpu")
        # the tree's minor faults past bare's: all of them, memsup's included
        extra = med(runs, "faults") - bare_faults
        cpu_pairs = [r["cpu"] / b["cpu"] for r, b in zip(runs, res["bare"]) if b["cpu"]]
        rows.append([mode, fmt(w), fmt(w / bare if bare else None, "x"),
                     fmt(statistics.median(pairs) if pairs else None, "x"),
                     fmt(cpu), fmt(cpu / bare_cpu if bare_cpu else None, "x"),
                     fmt(statistics.median(cpu_pairs) if cpu_pairs else None, "x"),
                     fmt(round(med(runs, "faults"))), fmt(round(extra)),
                     fmt(extra / med(runs, "images") if med(runs, "images") else None),
                     fmt(med(runs, "memsup_cpu")), fmt(med(runs, "finish")),
                     fmt(med(runs, "images")), fmt(mb("evidence")),
                     fmt(med(runs, "per_image")), fmt(mb("disk")), fmt(mb("processes_json")),
                     fmt(mb("fold")), fmt(mb("stacks_fold"))])
    print(f"\n### {name} (medians of {len(res['bare'])})\n")
    print(benchlib.md_table(rows[0], rows[1:]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir")
    ap.add_argument("--work", default="procs,build")
    ap.add_argument("--procs", type=int, default=100000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tmpfs-dir", help="also run the traced mode with its evidence here "
                    "(a tmpfs such as /dev/shm)")
    ap.add_argument("--sampling-off", action="store_true",
                    help="also run the traced mode with MEMTRACE_SAMPLE_BYTES=0")
    ap.add_argument("--no-unstaged", action="store_true",
                    help="leave out the traced mode with MEMSUP_STAGING_DIR=off")
    ap.add_argument("--split", action="store_true",
                    help="also run under memsup --no-trace and with the shim alone")
    ap.add_argument("--baseline-shim", metavar="PATH",
                    help="also run with this libmemtrace.so alone (an older build, say): "
                         "mode 'shim alone, baseline'")
    ap.add_argument("--package",
                    help="--work debian: the Debian source package to build (default "
                         "diffutils; its upstream build, configured without options)")
    ap.add_argument("--package-dir", metavar="DIR",
                    help="--work debian: build this unpacked, configured tree instead "
                         "(nothing is fetched)")
    ap.add_argument("--mode", metavar="NAME", action="append",
                    help="run only this mode, as named in the tables (repeatable; 'bare' is "
                         "needed for the ratios)")
    args = ap.parse_args()
    if args.tmpfs_dir and not Path(args.tmpfs_dir).is_dir():
        raise SystemExit(f"--tmpfs-dir {args.tmpfs_dir!r}: not a directory")
    if args.procs < 1 or args.reps < 1:
        raise SystemExit("--procs and --reps must be at least 1")
    if args.baseline_shim and not Path(args.baseline_shim).is_file():
        raise SystemExit(f"--baseline-shim {args.baseline_shim!r}: no such file")
    for work in args.work.split(","):
        if work not in WORKS:
            raise SystemExit(f"--work {work!r}: not a workload (they are: {', '.join(WORKS)})")
    if (args.package or args.package_dir) and "debian" not in args.work.split(","):
        raise SystemExit(f"--package{'-dir' if args.package_dir else ''}: only for --work "
                         f"debian, not in --work {args.work!r}")
    if args.package and args.package_dir:
        raise SystemExit("--package and --package-dir: one or the other")
    args.package = args.package or "diffutils"
    if args.package_dir and not (Path(args.package_dir) / "Makefile").is_file():
        raise SystemExit(f"--package-dir {args.package_dir!r}: no Makefile there "
                         "(an unpacked source tree, configured)")
    if args.mode and "bare" not in args.mode:
        raise SystemExit(f"--mode {' --mode '.join(args.mode)}: 'bare' is needed for the ratios")
    benchlib.require_pids_guard("scale.py", "100,000 processes and a parallel build")
    build = benchlib.find_builddir(args.builddir)
    memsup = benchlib.memsup_path(build)
    if memsup is None:
        raise SystemExit(f"no memsup in {build} (--builddir: a configured, built tree)")
    args.shim = benchlib.shim_path(build)
    if args.split and args.shim is None:
        raise SystemExit(f"--split: no libmemtrace.so in {build}")
    offered = ["bare", "memsup --no-trace", "memsup"] + traced_modes(args) + split_modes(args)
    for m in args.mode or []:
        if m not in offered:
            raise SystemExit(f"--mode {m!r}: not a mode of this run (its modes: "
                             f"{', '.join(repr(o) for o in offered)})")
    print(benchlib.facts_line(benchlib.machine_facts()))
    print("command: python3 bench/" + benchlib.shell_quote([Path(sys.argv[0]).name] + sys.argv[1:]))
    with tempfile.TemporaryDirectory(prefix="memtrace-scale-") as d:
        tmp = Path(d)
        for work in args.work.split(","):
            if work == "procs":
                table(f"{args.procs} runs of /bin/true", bench_procs(args, memsup, tmp))
            elif work == "build":
                table("make -j of memtrace itself", bench_build(args, memsup, tmp))
            else:
                name = Path(args.package_dir).name if args.package_dir else args.package
                table(f"make -j of {name} (a Debian source package)",
                      bench_debian(args, memsup, tmp))
    print(f"\nafter: loadavg {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
