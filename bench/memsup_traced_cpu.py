#!/usr/bin/env python3
"""memsup_traced_cpu.py: what tracing costs memsup itself (the target:
a merged run at most 2x the CPU of a --no-trace run of the same tree).

For trees of N idle processes (bench/sleep_tree N SECONDS), runs memsup with
and without --no-trace, interleaved, and reads memsup's own CPU from the
record it writes (`memsup_cpu_s`, its utime+stime; children excluded) over
its wall time.  Prints a Markdown table of medians.

Usage: python3 bench/memsup_traced_cpu.py --builddir BUILD [--reps 3]
       [--trees 10,100] [--seconds 5]
(`make bench-programs` first, for bench/sleep_tree.)
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def one_run(build, n, seconds, traced):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ev")
        cmd = [os.path.join(build, "supervisor", "memsup"), "-q", "-o", out, "--poll-ms", "10"]
        if not traced:
            cmd.append("--no-trace")
        cmd += ["--", os.path.join(build, "bench", "sleep_tree"), str(n), str(seconds)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(out, "resources.json")) as f:
            rec = json.load(f)
        return 100.0 * rec["memsup_cpu_s"] / rec["wall_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--trees", default="10,100")
    ap.add_argument("--seconds", type=float, default=5.0)
    a = ap.parse_args()
    trees = [int(t) for t in a.trees.split(",")]
    runs = {}
    for n in trees:
        for _ in range(a.reps):
            for traced in (False, True):  # interleaved: load drifts hit both
                runs.setdefault((n, traced), []).append(one_run(a.builddir, n, a.seconds, traced))
    print("| tree | --no-trace | traced (default) | traced / --no-trace |")
    print("|---:|---:|---:|---:|")
    for n in trees:
        off = statistics.median(runs[(n, False)])
        on = statistics.median(runs[(n, True)])
        print(f"| {n} | {off:.2f}% | {on:.2f}% | {on / off:.2f}x |")


if __name__ == "__main__":
    main()
