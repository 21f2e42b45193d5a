#!/usr/bin/env python3
"""start_cost.py: what libmemtrace.so costs each process image that starts
and ends under it, measured on /bin/true (an image that does nothing else)
or on a command of your own (--command, e.g. one compile: gcc, cc1, as).

A traced build or test suite is thousands of short images: there the shim's
start and end (loading the library, resolving the real functions, its
record, its first writes to its own pages) are most of what it costs, not
its malloc path.  Each first write to a page is a page fault, and faults
are slow on the machines we measure (10-20 us; 20-40 us for a code page).

The parent (this script, not preloaded) starts `/bin/true` (or --command,
in --cwd, and then only inside scripts/pids-guard.sh, since a command may
fork as it likes) with os.posix_spawn --count times per repetition, one at
a time, and reads, from
getrusage(RUSAGE_CHILDREN), the children's minor page faults and CPU time.
Variants, interleaved round-robin over --reps repetitions (the order
rotates each repetition): bare, an empty preload library (the cost of any
preload at all), and each shim given (--shim, repeated; default the
build's) with MEMTRACE_QUIET=1 (counters, no file) and with MEMTRACE_DIR on
/dev/shm (its record file, as under memsup); --sampling-off adds each
shim with MEMTRACE_QUIET=1 and MEMTRACE_SAMPLE_BYTES=0 (the call-site
sampler's share).  Reported: medians of wall and child CPU per run, and
faults per run (nearly the same in every repetition, so the steadiest
figure on a noisy machine), with the difference to bare.

The check follows the table: for each shim, the page faults a
traced image (MEMTRACE_DIR) of /bin/true takes over bare, and PASS when
they are at most --target-faults (12, half of the 24 the shim's own start
took in a traced build), FAIL otherwise.  A count, not a time: it repeats
within a tenth of a fault on a busy machine.  With --command the count is
printed without a verdict (the target is set on /bin/true).
"""
import argparse
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean (distcheck, git status)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

TRUE = "/bin/true"


def build_empty(tmp):
    src = tmp / "empty.c"
    src.write_text("int memtrace_bench_empty;\n")
    so = tmp / "libempty.so"
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", "-o", str(so),
                    str(src)], check=True)
    return so


def clean_env():
    env = dict(os.environ)
    for k in list(env):
        if k == "LD_PRELOAD" or k.startswith("MEMTRACE_"):
            del env[k]
    return env


def spawn_many(cmd, env, count):
    """(wall s, child CPU s, minor faults) of `count` runs of cmd."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    for _ in range(count):
        pid = os.posix_spawn(cmd[0], cmd, env)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"start_cost: {benchlib.shell_quote(cmd)} failed "
                             f"(exit {os.waitstatus_to_exitcode(status)}) with "
                             f"LD_PRELOAD={env.get('LD_PRELOAD', '')!r}")
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, after.ru_minflt - before.ru_minflt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir")
    ap.add_argument("--shim", action="append", default=[],
                    help="a libmemtrace.so to measure, LABEL=PATH or PATH (repeatable; "
                         "default: the build's)")
    ap.add_argument("--count", type=int, default=1000, help="images per repetition")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--command", default=TRUE,
                    help=f"the command to run, split as the shell would (default {TRUE}); "
                         "its program is looked up in PATH")
    ap.add_argument("--cwd", default=None, help="where --command runs (default: here)")
    ap.add_argument("--target-faults", type=float, default=12.0,
                    help="the check: most page faults over bare a traced "
                         "/bin/true may take (default 12)")
    ap.add_argument("--sampling-off", action="store_true",
                    help="also each shim with MEMTRACE_SAMPLE_BYTES=0")
    args = ap.parse_args(argv)
    if args.count < 1 or args.reps < 1:
        ap.error(f"--count {args.count} and --reps {args.reps} must be at least 1")
    cmd = shlex.split(args.command)
    if not cmd:
        ap.error("--command '': nothing to run")
    prog = shutil.which(cmd[0])
    if prog is None:
        ap.error(f"--command {args.command!r}: {cmd[0]!r} not found")
    cmd[0] = prog
    if args.command != TRUE:
        # a command of the user's may fork as it likes (make -j, say)
        benchlib.require_pids_guard("start_cost", "--command")
    if args.cwd is not None and not Path(args.cwd).is_dir():
        ap.error(f"--cwd {args.cwd!r}: not a directory")
    shims = []
    for s in args.shim:
        label, _, path = s.rpartition("=")
        shims.append((label or "shim", Path(path).resolve()))  # --cwd moves us
    if not shims:
        built = benchlib.shim_path(benchlib.find_builddir(args.builddir))
        if not built:
            print("start_cost: no libmemtrace.so: not measured")
            return 0
        shims.append(("shim", built))
    for label, path in shims:
        if not path.is_file():
            ap.error(f"--shim {label}={path}: no such file")
    facts = benchlib.machine_facts()
    tmp = Path(tempfile.mkdtemp(prefix="mt-startcost-"))
    shm = Path(tempfile.mkdtemp(prefix="mt-startcost-", dir="/dev/shm"))
    base = clean_env()
    variants = [("bare", base, False),
                ("empty preload", dict(base, LD_PRELOAD=str(build_empty(tmp))), False)]
    for label, path in shims:
        variants.append((f"{label}, MEMTRACE_QUIET=1",
                         dict(base, LD_PRELOAD=str(path), MEMTRACE_QUIET="1"), False))
        variants.append((f"{label}, MEMTRACE_DIR", dict(base, LD_PRELOAD=str(path)), True))
        if args.sampling_off:
            variants.append((f"{label}, MEMTRACE_QUIET=1, sampling off",
                             dict(base, LD_PRELOAD=str(path), MEMTRACE_QUIET="1",
                                  MEMTRACE_SAMPLE_BYTES="0"), False))
    walls = {v[0]: [] for v in variants}
    cpus = {v[0]: [] for v in variants}
    faults = {v[0]: [] for v in variants}
    here = os.getcwd()
    try:
        if args.cwd is not None:
            os.chdir(args.cwd)
        for rep in range(args.reps):
            k = rep % len(variants)
            for name, env, with_dir in variants[k:] + variants[:k]:
                if with_dir:
                    recdir = Path(tempfile.mkdtemp(dir=shm))
                    env = dict(env, MEMTRACE_DIR=str(recdir))
                wall, cpu, flt = spawn_many(cmd, env, args.count)
                if with_dir:
                    shutil.rmtree(recdir)
                walls[name].append(wall / args.count * 1e6)
                cpus[name].append(cpu / args.count * 1e6)
                faults[name].append(flt / args.count)
    finally:
        os.chdir(here)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)
    bare_wall = benchlib.summary(walls["bare"])[0]
    bare_cpu = benchlib.summary(cpus["bare"])[0]
    bare_flt = benchlib.summary(faults["bare"])[0]
    rows = []
    for name, _, _ in variants:
        w, wlo, whi = benchlib.summary(walls[name])
        c = benchlib.summary(cpus[name])[0]
        f = benchlib.summary(faults[name])[0]
        rows.append([name, f"{w:.0f} ({wlo:.0f}-{whi:.0f})", f"{w - bare_wall:+.0f}",
                     f"{c:.0f}", f"{c - bare_cpu:+.0f}", f"{f:.1f}", f"{f - bare_flt:+.1f}"])
    argv_shown = ["python3", "bench/start_cost.py"] + (argv if argv is not None else sys.argv[1:])
    print(f"Run: {benchlib.facts_line(facts)}\n")
    print(f"Command: `{benchlib.shell_quote(argv_shown)}`  ")
    where = f" in `{args.cwd}`" if args.cwd is not None else ""
    print(f"{args.count} runs of `{benchlib.shell_quote(cmd)}`{where} per repetition, {args.reps} "
          "repetitions interleaved; medians (min-max) per run.\n")
    print(benchlib.md_table(
        ["variant", "wall us", "vs bare", "child CPU us", "vs bare", "minor faults",
         "vs bare"], rows))
    print()
    for label, _ in shims:
        over = benchlib.summary(faults[f"{label}, MEMTRACE_DIR"])[0] - bare_flt
        if args.command == TRUE:
            verdict = "PASS" if over <= args.target_faults else "FAIL"
            print(f"check: {label}: the shim's own page faults at a traced "
                  f"image's start, over bare: {over:.1f} (target {args.target_faults:g} "
                  f"or fewer): {verdict}")
        else:
            print(f"count: {label}: page faults of a traced `{benchlib.shell_quote(cmd)}` "
                  f"over bare: {over:.1f} (no verdict: the target is set on {TRUE})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
