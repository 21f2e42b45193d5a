#!/usr/bin/env python3
"""output_cpu.py: what passing 1 GB of a command's output through memsup
costs: `--output tee` should cost memsup no more CPU than the log file of
`--output log` (measure_command's behaviour, scripts/memsup.py) does.

Runs a chatty command bare and under memsup in each --output mode,
interleaved round-robin over --reps repetitions, and reads:
  memsup   memsup's own CPU (utime+stime), from the record's memsup_cpu_s;
  total    memsup plus the whole command tree: wait4()'s rusage of memsup,
           which includes every child it reaped (bare: the command's own);
  wall     seconds.
Medians, and ratios of medians to `log`.  The command's stdout goes to
/dev/null (tee, inherit, bare) unless --sink file puts it in a file in the
temporary directory; --sink pipe sends it to `cat > /dev/null`.

Workloads (--work): `flood` is tests/progs/h_flood (64 KiB writes of a
cheap xorshift stream), `seq` is seq(1) (4 KiB stdio writes of short lines),
`chatty` is tests/progs/chatty (uneven writes of up to 70 kB).

Usage: python3 bench/output_cpu.py --builddir BUILD [--mb 1000] [--reps 5]
       [--work flood,seq] [--sink null|file|pipe]
(`make check TESTS=` first: it builds tests/progs.)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

MODES = ["bare", "log", "tee", "inherit"]


def workload(build, work, mb):
    if work == "flood":
        return [os.path.join(build, "tests", "progs", "h_flood"), str(mb)]
    if work == "chatty":
        return [os.path.join(build, "tests", "progs", "chatty"), str(mb * 1000000)]
    if work == "seq":
        # seq 1 N writes about N * 8.9 bytes for N near 1e8
        return ["seq", "1", str(int(mb * 1000000 / 8.89))]
    raise SystemExit(f"unknown workload {work}")


def one_run(build, mode, work, mb, sink):
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        out = os.path.join(tmp, "ev")
        cmd = workload(build, work, mb)
        if mode != "bare":
            # --log-max unlimited: the whole log, as when this was written;
            # a bounded log is bench/relay_cost.py's
            cmd = [os.path.join(build, "supervisor", "memsup"), "-q", "-o", out,
                   "--no-trace", "--output", mode] + \
                (["--log-max", "unlimited"] if mode != "inherit" else []) + ["--"] + cmd
        if sink == "file":
            dst = open(os.path.join(tmp, "out"), "wb")
        else:
            dst = open(os.devnull, "wb")
        reader = None
        if sink == "pipe":
            reader = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=dst)
            stdout = reader.stdin
        else:
            stdout = dst
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL)
        if reader:
            reader.stdin.close()
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if reader:
            reader.wait()
        dst.close()
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
        total = ru.ru_utime + ru.ru_stime
        own = 0.0
        if mode != "bare":
            with open(os.path.join(out, "resources.json")) as f:
                rec = json.load(f)
            own = rec["memsup_cpu_s"]
            size = rec["output"]["log_bytes"]
            want = None if mode == "inherit" else mb * 1000000
            if work != "seq" and size != want:
                raise SystemExit(f"{mode}: stdout.log has {size} bytes, not {want}")
        return {"memsup": own, "total": total, "wall": wall}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir", help="configured build tree (default: $MEMTRACE_BUILDDIR or .)")
    ap.add_argument("--mb", type=int, default=1000, help="decimal MB of output (default 1000)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--work", default="flood,seq")
    ap.add_argument("--sink", default="null", choices=["null", "file", "pipe"])
    ap.add_argument("--json", help="write the raw runs here")
    a = ap.parse_args(argv)
    a.builddir = str(benchlib.find_builddir(a.builddir))
    for prog in ("h_flood", "chatty"):
        if not os.path.exists(os.path.join(a.builddir, "tests", "progs", prog)):
            raise SystemExit(f"{prog} is not built: `make check TESTS=` in {a.builddir}")
    works = a.work.split(",")
    runs = {}
    for _ in range(a.reps):
        for work in works:
            for mode in MODES:  # interleaved: load drifts hit every mode alike
                runs.setdefault((work, mode), []).append(
                    one_run(a.builddir, mode, work, a.mb, a.sink))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({f"{w}/{m}": v for (w, m), v in runs.items()}, f, indent=1)
    print(f"{a.mb} MB of output, stdout to {a.sink}, {a.reps} interleaved repetitions, "
          "medians (min-max); ratios are of medians, to --output log")
    print()
    print("| workload | mode | memsup CPU s | memsup / log | total CPU s | total / log | wall s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for work in works:
        base = {k: statistics.median(r[k] for r in runs[(work, "log")])
                for k in ("memsup", "total")}
        for mode in MODES:
            rs = runs[(work, mode)]
            med = {k: statistics.median(r[k] for r in rs) for k in ("memsup", "total", "wall")}
            lo = {k: min(r[k] for r in rs) for k in ("memsup", "total")}
            hi = {k: max(r[k] for r in rs) for k in ("memsup", "total")}
            own = "-" if mode == "bare" else \
                f"{med['memsup']:.3f} ({lo['memsup']:.3f}-{hi['memsup']:.3f})"
            own_ratio = "-" if mode == "bare" else f"{med['memsup'] / base['memsup']:.2f}x"
            print(f"| {work} | {mode} | {own} | {own_ratio} | "
                  f"{med['total']:.2f} ({lo['total']:.2f}-{hi['total']:.2f}) | "
                  f"{med['total'] / base['total']:.2f}x | {med['wall']:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
