#!/usr/bin/env python3
"""sample_cost.py: what one sampled allocation costs in libmemtrace.so: its
call stack (the frame-pointer walk, or libgcc's DWARF unwinder where the
code keeps no frame pointers) and the sites table, with its free.

bench/malloc_bench.c is built twice (cc -O2, with and without frame
pointers) and `malloc_bench 1 OPS` runs under libmemtrace.so with
MEMTRACE_SAMPLE_BYTES=0 (counters only), the default interval, and 1 (every
block sampled), interleaved round-robin over --reps repetitions (the order
rotates each repetition).  From malloc_bench's own timing of its loop and
its own call counts:

  ns per sampled allocation = (median loop s, every block sampled
                               - median loop s, sampling off)
                              / allocations (malloc + calloc + realloc)

which includes the sampled block's free (a table lookup and removal under
the lock).  The shim's own clock gives the allocation side alone: the runs
with every block sampled also write the stacks file (MEMTRACE_DIR), whose
header holds sample_ns (time in the sample path: stack, lock, table) and
the count of samples, and how many stacks the frame-pointer walk took.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean (distcheck, git status)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import mtrecord  # noqa: E402

RATES = [("off", "0"), ("default", None), ("every", "1")]


def build(tmp, fp):
    exe = tmp / ("malloc_bench_fp" if fp else "malloc_bench_nofp")
    flag = "-fno-omit-frame-pointer" if fp else "-fomit-frame-pointer"
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-g", "-pthread", flag, "-o", str(exe),
                    str(benchlib.BENCH_DIR / "malloc_bench.c")], check=True)
    return exe


def run(shim, exe, ops, rate, recdir):
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "MEMTRACE_DIR", "MEMTRACE_OUT", "MEMTRACE_SAMPLE_BYTES"):
        env.pop(k, None)
    env.update(LD_PRELOAD=str(shim), MEMTRACE_QUIET="1")
    if rate is not None:
        env["MEMTRACE_SAMPLE_BYTES"] = rate
    if recdir is not None:
        env["MEMTRACE_DIR"] = str(recdir)
    p = subprocess.run([str(exe), "1", str(ops)], env=env, capture_output=True, text=True,
                       check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir")
    ap.add_argument("--shim")
    ap.add_argument("--ops", type=int, default=300000)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args(argv)
    builddir = benchlib.find_builddir(args.builddir)
    shim = Path(args.shim) if args.shim else benchlib.shim_path(builddir)
    if not shim:
        print("sample_cost: no libmemtrace.so: not measured")
        return 0
    facts = benchlib.machine_facts()
    tmp = Path(tempfile.mkdtemp(prefix="mt-samplecost-"))
    progs = [("frame pointers", build(tmp, True)), ("no frame pointers", build(tmp, False))]
    loops = {(p, r): [] for p, _ in progs for r, _ in RATES}
    heads = {p: [] for p, _ in progs}
    counts = {}
    combos = [(p, exe, r, v) for p, exe in progs for r, v in RATES]
    for rep in range(args.reps):
        k = rep % len(combos)
        for p, exe, r, v in combos[k:] + combos[:k]:
            recdir = None
            if r == "every":
                recdir = Path(tempfile.mkdtemp(dir=tmp))
            out = run(shim, exe, args.ops, v, recdir)
            loops[(p, r)].append(out["loop_s"])
            counts[p] = out["malloc"] + out["calloc"] + out["realloc"]
            if recdir is not None:
                heads[p] += mtrecord.read_stacks_dir(recdir)
    rows = []
    for p, _ in progs:
        off = benchlib.summary(loops[(p, "off")])[0]
        dflt = benchlib.summary(loops[(p, "default")])[0]
        every = benchlib.summary(loops[(p, "every")])[0]
        allocs = counts[p]
        hs = [h for h in heads[p] if h["samples"]]
        own = sorted(h["sample_ns"] / h["samples"] for h in hs)
        fp = sum(h["fp_samples"] for h in hs) / max(1, sum(h["samples"] for h in hs))
        rows.append([p, f"{off:.4f}", f"{dflt:.4f} ({dflt / off:.3f}x)", f"{every:.4f}",
                     f"{allocs:,}", f"**{(every - off) / allocs * 1e9:.0f}**",
                     f"{own[len(own) // 2]:.0f}" if own else "-", f"{100 * fp:.0f}%"])
    argv_shown = ["python3", "bench/sample_cost.py"] + (argv if argv is not None else sys.argv[1:])
    print(f"Run: {benchlib.facts_line(facts)}\n")
    print(f"Command: `{benchlib.shell_quote(argv_shown)}`  ")
    print(f"`malloc_bench 1 {args.ops}`, {args.reps} repetitions interleaved; medians of "
          "malloc_bench's own loop time.\n")
    print(benchlib.md_table(
        ["malloc_bench built with", "loop s, sampling off", "loop s, default 512 KiB",
         "loop s, every block", "allocations", "ns per sampled allocation (with its free)",
         "shim's own ns per sample (stack + table)", "stacks by frame-pointer walk"], rows))
    subprocess.run(["rm", "-rf", str(tmp)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
