#!/usr/bin/env python3
"""run_all.py: run every memtrace benchmark and print one Markdown report.

    python3 bench/run_all.py --builddir BUILD [--quick] [--out FILE]

BUILD is a configured and built tree (`make` and `make bench-programs` done;
`make bench` does all of that and then runs this).  The parts run one
after the other, never at the same time, since they time each other's
neighbours on a 2-core machine:
  1. shim_overhead.py  wall-time ratios: bare / libmemtrace / memusage / heaptrack
  2. instr_count.py    instructions per malloc_bench op under each preload
                       (callgrind: repeatable, where the wall time is noisy)
  3. correctness.py    what each tool reports against the ground truth
  4. memsup_cpu.py     memsup's CPU per second vs the pure-Python measure_command
  5. output_cpu.py     the CPU of 1 GB of a command's output in each --output mode
  6. sample_cost.py    ns per sampled allocation (frame-pointer walk, DWARF)
  7. start_cost.py     what each process image's start and end cost (/bin/true)
--quick runs fewer repetitions and shorter trees (a smoke run: do not quote it).
The hand-written reading of the numbers lives in bench/RESULTS.md; this only
produces the tables.
"""
import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean (distcheck, git status)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import correctness  # noqa: E402
import instr_count  # noqa: E402
import memsup_cpu  # noqa: E402
import output_cpu  # noqa: E402
import sample_cost  # noqa: E402
import shim_overhead  # noqa: E402
import start_cost  # noqa: E402


def part(title, fn, args):
    print(f"\n## {title}\n", flush=True)
    buf = io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stdout(buf):
        fn(args)
    print(buf.getvalue().rstrip())
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"\n(took {time.monotonic() - t0:.0f} s; load average at the end {load})", flush=True)
    return buf.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir", help="configured build tree (default: $MEMTRACE_BUILDDIR or .)")
    ap.add_argument("--quick", action="store_true", help="smoke run, numbers not quotable")
    ap.add_argument("--only", choices=["overhead", "instr", "correctness", "memsup", "output",
                                       "sample", "start"],
                    action="append")
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args()
    bd = ["--builddir", args.builddir] if args.builddir else []
    only = args.only or ["overhead", "instr", "correctness", "memsup", "output", "sample",
                         "start"]
    report = io.StringIO()

    class Tee:
        def write(self, s):
            sys.__stdout__.write(s)
            report.write(s)

        def flush(self):
            sys.__stdout__.flush()

    sys.stdout = Tee()
    facts = benchlib.machine_facts()
    print(f"# memtrace benchmarks\n\nMachine: {benchlib.facts_line(facts)}")
    if "overhead" in only:
        part("libmemtrace overhead (shim_overhead.py)", shim_overhead.main,
             bd + (["--reps", "3", "--ops", "2000000"] if args.quick else []))
    if "instr" in only:
        part("Instructions per operation (instr_count.py)", instr_count.main,
             bd + ["--annotate"] + ([] if args.quick else ["--real"]))
    if "correctness" in only:
        part("What the tools report (correctness.py)", correctness.main, bd)
    if "memsup" in only:
        part("memsup CPU (memsup_cpu.py)", memsup_cpu.main,
             bd + (["--reps", "1", "--seconds", "3"] if args.quick else []))
    if "output" in only:
        part("The command's output through memsup (output_cpu.py)", output_cpu.main,
             bd + (["--reps", "1", "--mb", "200"] if args.quick else []))
    if "sample" in only:
        part("Cost of a sampled allocation (sample_cost.py)", sample_cost.main,
             bd + (["--reps", "3", "--ops", "100000"] if args.quick else []))
    if "start" in only:
        part("What an image's start and end cost (start_cost.py)", start_cost.main,
             bd + (["--reps", "3", "--count", "200"] if args.quick else []))
    sys.stdout = sys.__stdout__
    if args.out:
        Path(args.out).write_text(report.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
