#!/usr/bin/env python3
"""containment.py: what the run's own cgroup buys, measured: fork bombs
stopped at --max-procs, a spike between polls against the kernel's peak,
a grower under --mem-max against --rss-mb -- each next to the /proc scan
(--cgroup off) where that makes sense, in one interleaved run.

  bomb-c      memsup --max-procs N -- tests/progs/bomb  (for (;;) fork(); in a child)
  bomb-sh     memsup --max-procs N -- bash -c 'b() { sleep 5 & sleep 5 & b & b; }; b'
              wall_s of the record (launch to the last process gone),
              max_processes, forks_refused
  spike       memsup --no-trace --poll-ms 100 -- tests/progs/spike MB MS:
              peak_cgroup_mb and peak_tree_rss_mb against MB (the truth)
  mem-max     memsup --no-trace --mem-max MB -- tests/progs/grower 8 20 2000:
              overshoot = peak_cgroup_mb - MB, next to --rss-mb MB's
              peak_tree_rss_mb - MB (the polled budget)

The bombs only ever run inside a pids-limited cgroup: run this through
scripts/pids-guard.sh (it refuses otherwise).  Nothing here is a test.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

SHELL_BOMB = "b() { sleep 5 & sleep 5 & b & b; }; b"


def record(memsup, outdir, args, timeout=120):
    argv = [str(memsup), "-q", "-o", str(outdir)] + args
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=timeout)
    rec = json.loads((outdir / "resources.json").read_text())
    rec["_rc"] = p.returncode
    return rec


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, spec=".3f"):
    return "-" if v is None else format(v, spec)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--max-procs", type=int, default=50)
    ap.add_argument("--spike-mb", type=int, default=337)
    ap.add_argument("--spike-ms", type=int, default=40)
    ap.add_argument("--mem-mb", type=int, default=100)
    args = ap.parse_args(argv)
    benchlib.require_pids_guard("containment.py", "the fork bombs")
    build = benchlib.find_builddir(args.builddir)
    memsup = benchlib.memsup_path(build)
    progs = Path(build) / "tests" / "progs"
    tmp = Path(tempfile.mkdtemp(prefix="mt-containment-"))
    n = args.max_procs
    cases = {
        "bomb-c auto": ["--no-trace", "--max-procs", str(n), "--", str(progs / "bomb")],
        "bomb-sh auto": ["--no-trace", "--max-procs", str(n), "--", "bash", "-c", SHELL_BOMB],
        "spike auto": ["--no-trace", "--poll-ms", "100", "--", str(progs / "spike"),
                       str(args.spike_mb), str(args.spike_ms)],
        "spike off": ["--no-trace", "--cgroup", "off", "--poll-ms", "100", "--",
                      str(progs / "spike"), str(args.spike_mb), str(args.spike_ms)],
        "mem-max": ["--no-trace", "--mem-max", str(args.mem_mb), "--", str(progs / "grower"),
                    "8", "20", "2000"],
        "rss-mb": ["--no-trace", "--rss-mb", str(args.mem_mb), "--", str(progs / "grower"),
                   "8", "20", "2000"],
    }
    res = {k: [] for k in cases}
    names = list(cases)
    for run in range(args.runs):
        order = names[run % len(names):] + names[:run % len(names)]
        for k in order:
            res[k].append(record(memsup, tmp / f"{k.replace(' ', '-')}-{run}", cases[k]))
    facts = benchlib.machine_facts()
    print(f"Run: {benchlib.facts_line(facts)}\n")
    print(f"Command: `{benchlib.shell_quote(['python3', 'bench/containment.py'] + (argv if argv is not None else sys.argv[1:]))}` "
          f"({args.runs} runs of each, interleaved; medians, min-max in brackets)\n")
    rows = []
    for k in ("bomb-c auto", "bomb-sh auto"):
        rs = res[k]
        w = [r["wall_s"] for r in rs]
        rows.append([k.split()[0], f"{sum(r['_rc'] == 122 for r in rs)}/{len(rs)}",
                     f"{fmt(med(w))} s ({fmt(min(w))}-{fmt(max(w))})",
                     f"{max(r['max_processes'] for r in rs)} (N = {n})",
                     fmt(med([r.get('forks_refused') for r in rs]), ".0f"),
                     fmt(med([r['samples'] for r in rs]), ".0f"),
                     rs[0]["containment"]["mode"]])
    print(benchlib.md_table(["bomb", "exit 122", "wall_s: launch to all gone", "most alive at a sample",
                             "forks refused", "samples", "mode"], rows))
    print()
    rows = []
    for k in ("spike auto", "spike off"):
        rs = res[k]
        polled = [r["peak_tree_rss_mb"] / args.spike_mb for r in rs]
        kernel = [r["peak_cgroup_mb"] / args.spike_mb for r in rs if r.get("peak_cgroup_mb")]
        rows.append([k, rs[0]["containment"]["mode"],
                     f"{sum(p >= 0.99 for p in polled)}/{len(rs)}",
                     f"{fmt(med(polled))} ({fmt(min(polled))}-{fmt(max(polled))})",
                     f"{sum(x >= 0.99 for x in kernel)}/{len(rs)}" if kernel else "-",
                     f"{fmt(med(kernel))} ({fmt(min(kernel))}-{fmt(max(kernel))})" if kernel else "-",
                     f"{sum(any(b['kind'] == 'transient_peak' for b in r['blind_spots']) for r in rs)}/{len(rs)}"])
    print(benchlib.md_table([f"spike {args.spike_mb} MB, {args.spike_ms} ms, polls 100 ms", "mode",
                             "polled >= 99%", "polled / truth", "cgroup peak >= 99%",
                             "cgroup peak / truth", "transient_peak found"], rows))
    print()
    rows = []
    for k, key in (("mem-max", "peak_cgroup_mb"), ("rss-mb", "peak_tree_rss_mb")):
        rs = res[k]
        over = [r[key] - args.mem_mb for r in rs if r.get(key) is not None]
        rows.append([k, f"{sum(r['_rc'] == 123 for r in rs)}/{len(rs)}",
                     "/".join(sorted({str(r['reason']) for r in rs})), key,
                     f"{fmt(med(over), '.2f')} ({fmt(min(over), '.2f')} to {fmt(max(over), '.2f')})",
                     fmt(med([r.get('oom_kills') for r in rs]), ".0f")])
    print(benchlib.md_table([f"grower (8 MB / 20 ms), limit {args.mem_mb} MB", "exit 123", "reason",
                             "figure", "overshoot MB", "oom_kills"], rows))
    subprocess.run(["rm", "-rf", str(tmp)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
