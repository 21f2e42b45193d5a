#!/usr/bin/env python3
"""instr_count.py: instructions per malloc_bench operation under each preload,
counted by valgrind's callgrind (repeatable to the instruction, unlike time).

Each variant runs `malloc_bench 1 OPS` under callgrind at two operation counts
(--ops and 3x --ops); the difference of the instruction totals divided by the
difference of the counts is the marginal cost of one operation (one ring step:
a free or realloc plus a malloc or calloc, about 1.94 allocator calls), with
start-up and exit cancelled out.  The overhead of a tool is its marginal cost
minus bare's.  callgrind does not replace malloc (unlike memcheck), so the
program runs on glibc's allocator as it does natively.

With --threads N, malloc_bench runs N threads (ops per thread as above) and
the per-op figure divides by N times the difference: callgrind runs one thread
at a time, so this counts the multithreaded path's instructions without the
cache-line traffic between cores, which only wall time shows.

With --annotate, the top functions of the libmemtrace run are printed
(callgrind_annotate, inclusive), which is where the shim's time goes.

The targets are checked at the end: libmemtrace (sampling on, the
default interval) at most +45 extra instructions an operation on one
thread and +65 on two; the line prints the count and PASS or FAIL (other
thread counts print the count only).  The exit status stays 0: this is a
measurement, not a test.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean (distcheck, git status)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

# The targets: extra instructions an operation, libmemtrace with sampling
# on, by malloc_bench threads.
TARGETS = {1: 45.0, 2: 65.0}


def callgrind(argv, env_extra, out):
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "MEMTRACE_DIR", "MEMTRACE_OUT", "MEMTRACE_QUIET",
              "MEMTRACE_SAMPLE_BYTES", "DUMP_HEAPTRACK_OUTPUT"):
        env.pop(k, None)
    # `env VAR=... prog` under --trace-children: the preload applies to the
    # program only, not to valgrind's launcher; exec keeps the pid, so there is
    # one output file.
    cmd = ["valgrind", "--tool=callgrind", "--trace-children=yes",
           f"--callgrind-out-file={out}", "env"] + \
          [f"{k}={v}" for k, v in env_extra.items()] + argv
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    # one "Collected" line per traced process (exec keeps the pid, and its
    # counts restart): the sum is the whole tree's instructions
    counts = [int(x) for x in re.findall(r"Collected : (\d+)", p.stderr)]
    if not counts or p.returncode != 0:
        raise RuntimeError(f"callgrind failed: {p.stderr[-2000:]}")
    return sum(counts)


def real_workloads(args, builddir, variants, tmp):
    """Whole-tree instruction counts of smaller versions of the real
    workloads: the noise-free view of the <= 1.05x target (instructions are
    not time, but what a preload adds is mostly instructions)."""
    from shim_overhead import default_gcc_sources, gcc_flags
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    src = default_gcc_sources(builddir)[0]
    gdir = tmp / "gcc"
    gdir.mkdir(exist_ok=True)
    work = [("python (one round: a 300 000-entry dict built and dropped)",
             [py, "-c", "d = {i: (i, str(i)) for i in range(300000)}\ndel d\n"], None),
            (f"gcc -O2 -c {src.name} (gcc, cc1, as)",
             ["gcc"] + gcc_flags(builddir) + [str(src)], gdir)]
    rows = []
    for label, argv, cwd in work:
        base = None
        for name, env in variants:
            if name == "memtrace-dir":
                continue
            old = os.getcwd()
            if cwd:
                os.chdir(cwd)
            try:
                n = callgrind(argv, env, tmp / f"real-{name}.%p.out")
            finally:
                os.chdir(old)
            base = n if name == "bare" else base
            rows.append([label, name, f"{n:,}", f"{n / base:.4f}x"])
    print("\nWhole-tree instruction counts of the real workloads (callgrind, "
          "`--trace-children=yes`):\n")
    print(benchlib.md_table(["workload", "variant", "Ir, all processes", "Ir / bare"], rows))


def self_costs(out_file):
    """{function: self instructions} of one callgrind file, the shim's
    inlined pieces (callgrind names them by header) added to their
    function."""
    txt = subprocess.run(["callgrind_annotate", "--inclusive=no", "--auto=no",
                          "--threshold=100", str(out_file)],
                         capture_output=True, text=True).stdout
    costs = {}
    for ln in txt.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)$", ln)
        if not m or "PROGRAM TOTALS" in m.group(2):
            continue
        obj = re.search(r"\[(.*)\]$", m.group(2))
        name = re.sub(r"\s*\[.*\]$", "", m.group(2))
        src, _, fn = name.rpartition(":")
        # the shim's own code: by source file, or by object (the exported
        # malloc and free are assembler stubs without line information)
        shim = src.startswith("preload/") or "/preload/" in src or \
            (obj is not None and "libmemtrace" in obj.group(1))
        where = "shim" if shim else "other"
        key = (where, fn)
        costs[key] = costs.get(key, 0) + int(m.group(1).replace(",", ""))
    return costs


def per_function(tmp, ops, threads):
    """The shim's instructions an operation by function: the difference of
    the two libmemtrace runs' self costs, as for the totals."""
    a, b = self_costs(tmp / "memtrace.1.out"), self_costs(tmp / "memtrace.2.out")
    rows = []
    for key in set(a) | set(b):
        if key[0] != "shim":
            continue
        v = (b.get(key, 0) - a.get(key, 0)) / (ops * threads)
        if abs(v) >= 0.05:
            rows.append((v, key[1]))
    rows.sort(reverse=True)
    print("\nThe shim's instructions an operation by function (self cost, inlined "
          "code included; difference of the two runs):\n")
    print(benchlib.md_table(["function", "Ir per op"],
                            [[f"`{fn}`", f"{v:.2f}"] for v, fn in rows] +
                            [["all of the shim", f"{sum(v for v, _ in rows):.2f}"]]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir")
    ap.add_argument("--shim")
    ap.add_argument("--ops", type=int, default=100000)
    ap.add_argument("--threads", type=int, default=1,
                    help="malloc_bench threads (default 1)")
    ap.add_argument("--annotate", action="store_true")
    ap.add_argument("--real", action="store_true",
                    help="also count python3 (one dict round) and gcc -O2 on one file")
    args = ap.parse_args(argv)
    if args.threads < 1 or args.threads > 64:
        ap.error(f"--threads {args.threads}: between 1 and 64")
    if not benchlib.which("valgrind"):
        print("instr_count: valgrind not installed: not measured")
        return 0
    builddir = benchlib.find_builddir(args.builddir)
    shim = Path(args.shim) if args.shim else benchlib.shim_path(builddir)
    mb = str(benchlib.bench_program(builddir, "malloc_bench"))
    memusage = benchlib.first_existing(benchlib.LIBMEMUSAGE_CANDIDATES)
    tmp = Path(tempfile.mkdtemp(prefix="mt-instr-"))
    variants = [("bare", {})]
    if shim:
        variants += [("memtrace", {"LD_PRELOAD": str(shim), "MEMTRACE_QUIET": "1"}),
                     ("memtrace-nosample", {"LD_PRELOAD": str(shim), "MEMTRACE_QUIET": "1",
                                            "MEMTRACE_SAMPLE_BYTES": "0"}),
                     ("memtrace-dir", {"LD_PRELOAD": str(shim), "MEMTRACE_QUIET": "1",
                                       "MEMTRACE_DIR": str(tmp / "records")})]
        (tmp / "records").mkdir()
    if memusage:
        variants.append(("memusage", {"LD_PRELOAD": memusage}))
    # heaptrack is left out: its preload removes itself from the environment
    # of children, so behind `env` it would trace `env`, not malloc_bench.
    n1, n2, t = args.ops, 3 * args.ops, str(args.threads)
    rows, per_op = [], {}
    for name, env in variants:
        a = callgrind([mb, t, str(n1)], env, tmp / f"{name}.1.out")
        b = callgrind([mb, t, str(n2)], env, tmp / f"{name}.2.out")
        per_op[name] = (b - a) / ((n2 - n1) * args.threads)
        rows.append([name, f"{a:,}", f"{b:,}", f"{per_op[name]:.1f}"])
    base = per_op["bare"]
    for r in rows:
        extra = per_op[r[0]] - base
        r += [f"{extra:+.1f}", f"{per_op[r[0]] / base:.3f}x"]
    print(f"Command: `{benchlib.shell_quote(['python3', 'bench/instr_count.py'] + (argv if argv is not None else sys.argv[1:]))}`  ")
    print(f"`valgrind --tool=callgrind` on `malloc_bench {t} {n1}` and `malloc_bench {t} {n2}`; "
          "per op = difference / difference (of all threads' operations).\n")
    print(benchlib.md_table(["variant", f"Ir, {n1} ops", f"Ir, {n2} ops", "Ir per op",
                             "extra Ir per op", "per op / bare"], rows))
    if "memtrace" in per_op:
        extra = per_op["memtrace"] - base
        goal = TARGETS.get(args.threads)
        if goal is None:
            print(f"\nTarget: libmemtrace {extra:+.1f} instructions an operation "
                  f"on {args.threads} threads (no target for this thread count)")
        else:
            print(f"\nTarget: libmemtrace {extra:+.1f} instructions an operation "
                  f"on {args.threads} thread{'s' if args.threads > 1 else ''}, target "
                  f"<= +{goal:.0f}: {'PASS' if extra <= goal else 'FAIL'}")
    if args.real:
        real_workloads(args, builddir, variants, tmp)
    if args.annotate and shim:
        out = subprocess.run(["callgrind_annotate", "--inclusive=no",
                              str(tmp / "memtrace.2.out")],
                             capture_output=True, text=True).stdout
        keep = [ln for ln in out.splitlines() if re.match(r"\s*[\d,]+ \(", ln)][:25]
        print("\nTop functions (self cost), libmemtrace run, "
              f"malloc_bench {t} {n2}:\n\n```")
        print("\n".join(keep))
        print("```")
        per_function(tmp, n2 - n1, args.threads)
    subprocess.run(["rm", "-rf", str(tmp)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
