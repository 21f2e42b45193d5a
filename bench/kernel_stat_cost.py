#!/usr/bin/env python3
"""kernel_stat_cost.py: what reading the run's cgroup memory.stat (and the
limit's event counters) at every sample costs memsup, measured against a
memsup without it -- a build of an earlier commit, passed as
`--memsup before=PATH` -- in the same run.

Each memsup supervises `bench/sleep_tree N SECONDS` (N idle processes) with
`-q --no-trace --poll-ms P` (with --dense, `--sparse-ms 0` too: every sample
at --poll-ms) in its cgroup of its own (the default), and the figures are
per sample (the record's "samples"):

  CPU per sample    the memsup process's own run time (schedstat, read from
                    its zombie: memsup_cpu.py's method) over its samples;
                    round-robin over --reps repetitions, order rotated;
                    medians, and "paired": the median over repetitions of
                    each memsup's figure over the first memsup's of the
                    same repetition.  Depends on the load: compare within
                    one run.
  syscalls/sample   `strace -c` of the memsup process alone (no -f: neither
                    the sentinel nor the tree), calls by name: the
                    difference between a run of SECONDS and one of
                    2*SECONDS over the difference of their samples, as
                    below; a count, it repeats.
  instr/sample      user-space instructions (valgrind callgrind, memsup
                    alone), the difference between a run of SECONDS and
                    one of 2*SECONDS over the difference of their samples,
                    so start-up and the end cancel; a count, it repeats.
                    What the kernel does for a read is not in it.
  pread of a file   a leaf memory cgroup made (and removed) beside this
                    process's own: one pread at offset 0 of each file a
                    sample reads, --preads times in a loop, microseconds
                    each, the fastest of five rounds taken by turns
                    (Python's loop included, about 0.3 us here).

The per-file table is where the kernel's share shows: memory.stat is
formatted anew (and its counters flushed) at every read.
"""
import argparse
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean (distcheck, git status)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import memsup_cpu  # noqa: E402

# The files a sample reads where there is a memory cgroup, by version.
FILES_V1 = ["memory.usage_in_bytes", "memory.stat", "memory.kmem.usage_in_bytes",
            "memory.failcnt", "memory.oom_control"]
FILES_V2 = ["memory.current", "memory.stat", "memory.events"]


def memsup_argv(memsup, outdir, args, seconds):
    return ([str(memsup), "-q", "-o", str(outdir), "--poll-ms", str(args.poll_ms), "--no-trace"]
            + (["--sparse-ms", "0"] if args.dense else [])
            + ["--", str(args.tree_prog), str(args.procs), str(seconds)])


def record(outdir):
    try:
        return json.loads((Path(outdir) / "resources.json").read_text())
    except (OSError, ValueError):
        return {}


def timed(label, memsup, args, tmp, rep):
    outdir = tmp / f"cpu-{label}-{rep}"
    r = memsup_cpu.run_observer(memsup_argv(memsup, outdir, args, args.seconds),
                                tmp / f"cpu-{label}-{rep}.log")
    rec = record(outdir)
    cpu = r["sched_s"] if (r["sched_s"] is not None and r["threads"] <= 1) else r["stat_s"]
    samples = rec.get("samples") or 0
    mode = (rec.get("containment") or {}).get("mode", "?")
    return {"rc": r["rc"], "cpu_s": cpu, "samples": samples, "mode": mode,
            "wall_s": rec.get("wall_s") or r["driver_wall"]}


def strace_counts(label, memsup, args, tmp, seconds):
    outdir, out = tmp / f"strace-{label}-{seconds}", tmp / f"strace-{label}-{seconds}.txt"
    subprocess.run(["strace", "-c", "-S", "calls", "-o", str(out)]
                   + memsup_argv(memsup, outdir, args, seconds),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    calls = {}
    for line in out.read_text().splitlines():
        f = line.split()
        # "% time seconds usecs/call calls [errors] syscall"
        if len(f) >= 5 and re.fullmatch(r"[0-9.]+", f[0]) and f[-1] != "total":
            calls[f[-1]] = int(f[3])
    return calls, record(outdir).get("samples") or 0


def strace_per_sample(label, memsup, args, tmp):
    """Calls per sample by name, from a run of SECONDS and one of twice
    that: start-up and the end cancel out."""
    (c1, s1), (c2, s2) = (strace_counts(label, memsup, args, tmp, s)
                          for s in (args.seconds, 2 * args.seconds))
    if s2 <= s1:
        return {}
    return {k: (c2.get(k, 0) - c1.get(k, 0)) / (s2 - s1) for k in set(c1) | set(c2)}


def callgrind_ir(label, memsup, args, tmp, seconds):
    outdir, cg = tmp / f"cg-{label}-{seconds}", tmp / f"cg-{label}-{seconds}.out"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}"]
                   + memsup_argv(memsup, outdir, args, seconds),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    ir = None
    for line in cg.read_text().splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            ir = int(line.split()[1])
    return ir, record(outdir).get("samples") or 0


def own_memory_cgroup():
    """(directory, is_v2) of this process's memory cgroup, or (None, None)."""
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    for line in lines:
        _, ctl, path = line.split(":", 2)
        if "memory" in ctl.split(","):
            return Path("/sys/fs/cgroup/memory" + path), False
    for line in lines:
        if line.startswith("0::"):
            d = Path("/sys/fs/cgroup" + line[3:])
            try:
                if "memory" in (d / "cgroup.subtree_control").read_text().split():
                    return d, True
            except OSError:
                pass
    return None, None


def pread_costs(n):
    """Microseconds per pread of each file a sample reads, in a fresh leaf
    cgroup beside this process's own; {} where none can be made."""
    own, v2 = own_memory_cgroup()
    if own is None:
        return {}, "no memory cgroup"
    leaf = own / f"mt-statcost-{os.getpid()}"
    try:
        leaf.mkdir()
    except OSError as e:
        return {}, f"cannot make {leaf}: {e}"
    out = {}
    fds = {}
    try:
        for name in FILES_V2 if v2 else FILES_V1:
            try:
                fds[name] = os.open(leaf / name, os.O_RDONLY)
                os.pread(fds[name], 8192, 0)
            except OSError:
                pass
        # the files by turns, five rounds, the fastest round of each: what
        # the machine's other work adds stays out, and drifts alike for all
        per = max(1, n // 5)
        for _ in range(5):
            for name, fd in fds.items():
                t0 = time.perf_counter()
                for _ in range(per):
                    os.pread(fd, 8192, 0)
                us = (time.perf_counter() - t0) / per * 1e6
                out[name] = min(us, out.get(name, us))
    finally:
        for fd in fds.values():
            os.close(fd)
        leaf.rmdir()
    return out, ("cgroup v2" if v2 else "cgroup v1") + f", a leaf in {own}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir")
    ap.add_argument("--memsup", action="append", default=[], metavar="LABEL=PATH",
                    help="a memsup to measure (repeatable; default: after=BUILDDIR's)")
    ap.add_argument("--procs", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--poll-ms", type=int, default=10)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--preads", type=int, default=20000)
    ap.add_argument("--no-callgrind", dest="callgrind", action="store_false")
    ap.add_argument("--dense", action="store_true",
                    help="every sample at --poll-ms (--sparse-ms 0): the cost of a dense "
                    "sample, where the default follows the memory and an idle tree is "
                    "sampled about once a second")
    args = ap.parse_args(argv)
    # memsup_cpu.py's rule: the default tree (10) stays small; a larger one
    # is a process count the machine must be fenced against
    if args.procs > 100:
        benchlib.require_pids_guard("kernel_stat_cost", f"--procs {args.procs}")
    builddir = benchlib.find_builddir(args.builddir)
    memsups = []
    for m in args.memsup or [f"after={benchlib.memsup_path(builddir)}"]:
        label, _, path = m.partition("=")
        memsups.append((label, Path(path)))
    args.tree_prog = benchlib.bench_program(builddir, "sleep_tree")
    facts = benchlib.machine_facts()
    tmp = Path(tempfile.mkdtemp(prefix="mt-statcost-"))
    atexit.register(shutil.rmtree, tmp, True)  # its runs' evidence, gone with it

    cpu = {label: [] for label, _ in memsups}
    for rep in range(args.reps):
        k = rep % len(memsups)
        for label, path in memsups[k:] + memsups[:k]:
            cpu[label].append(timed(label, path, args, tmp, rep))
    sc = {label: strace_per_sample(label, path, args, tmp) for label, path in memsups} \
        if benchlib.which("strace") else {}
    cg = {}
    if args.callgrind and benchlib.which("valgrind"):
        for label, path in memsups:
            a, b = (callgrind_ir(label, path, args, tmp, s)
                    for s in (args.seconds, 2 * args.seconds))
            cg[label] = (b[0] - a[0]) / (b[1] - a[1]) if a[0] and b[0] and b[1] > a[1] else None
    reads, where = pread_costs(args.preads)

    print(f"Run: {benchlib.facts_line(facts)}\n")
    print(f"Command: `{benchlib.shell_quote(['python3', 'bench/kernel_stat_cost.py'] + (argv if argv is not None else sys.argv[1:]))}`  ")
    print(f"memsup: `LABEL -q -o DIR --poll-ms {args.poll_ms} --no-trace -- sleep_tree "
          f"{args.procs} {args.seconds}`; {args.reps} interleaved repetitions, medians "
          "(min-max)\n")
    header = ["memsup", "mode", "CPU us / sample (min-max)", "paired", "samples/s",
              "syscalls / sample", "of them pread64", "user instr / sample (callgrind)"]
    rows = []
    first = memsups[0][0]

    def us(r):
        return 1e6 * r["cpu_s"] / r["samples"] if r["samples"] else None

    for label, _ in memsups:
        runs = [r for r in cpu[label] if r["samples"]]
        per = benchlib.summary([us(r) for r in runs]) if runs else None
        # this memsup over the first, repetition by repetition (one's
        # neighbour in time), then the median
        pairs = [us(a) / us(b) for a, b in zip(cpu[label], cpu[first]) if us(a) and us(b)]
        paired = f"{benchlib.summary(pairs)[0]:.3f}x" if pairs and label != first else "-"
        sps = benchlib.summary([r["samples"] / r["wall_s"] for r in runs])[0] if runs else 0
        calls = sc.get(label, {})
        total = sum(calls.values()) if calls else None
        pread = calls.get("pread64", 0) if calls else None
        rows.append([label, "/".join(sorted({r["mode"] for r in runs})) or "-",
                     f"**{per[0]:.1f}** ({per[1]:.1f}-{per[2]:.1f})" if per else "-", paired,
                     f"{sps:.0f}", f"{total:.2f}" if total is not None else "-",
                     f"{pread:.2f}" if pread is not None else "-",
                     f"{cg[label]:.0f}" if cg.get(label) else "-"])
    print(benchlib.md_table(header, rows))
    bad = [f"{label} rc={r['rc']}" for label in cpu for r in cpu[label] if r["rc"] != 0]
    if bad:
        print("\nRuns that did not exit 0: " + ", ".join(bad))
    names = sorted({k for c in sc.values() for k, v in c.items() if abs(v) >= 0.05})
    if names:
        print("\nSystem calls per sample by name (strace -c, as above; those of 0.05 or more):\n")
        print(benchlib.md_table(["memsup"] + names,
                                [[label] + [f"{sc[label].get(k, 0):.2f}" for k in names]
                                 for label, _ in memsups if label in sc]))
    if reads:
        print(f"\nOne pread at offset 0 ({where}; {args.preads} each):\n")
        print(benchlib.md_table(["file", "us per pread"],
                                [[n, f"{v:.2f}"] for n, v in reads.items()]))
    elif where:
        print(f"\nNo per-file figures: {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
