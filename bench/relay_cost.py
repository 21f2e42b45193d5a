#!/usr/bin/env python3
"""relay_cost.py: what passing a real command's output through memsup costs
memsup, and what it leaves in the evidence (the target: memsup's CPU under 3%
of the command's wall, evidence under 3 MiB, for `sort` of 200 MB and
`tar czf -` of 100 MB).

Workloads (--work), their input made once, deterministically, in
$TMPDIR/memtrace-bench-$UID/relay/ (kept for the next run):
  sort  LC_ALL=C sort of 200 MB of text (lines of random letters, 85 on
        average, as in a log file); its output is 200 MB;
  tar   tar czf - of a directory of 100 files of 1 MB (75 of random bytes,
        25 of such text); its output is about 90 MB.

Each workload runs bare and under memsup, in each variant (--variants):
  bare     the command alone;
  memsup   `memsup -q -o DIR -- CMD`, this build's defaults (traced, tee);
  inherit  the same with --output inherit: no relay, nothing logged, the
           floor of sampling and tracing;
  before   --baseline MEMSUP, an earlier memsup with its defaults, in the
           same run (only with --baseline);
  relay, relay-inherit, relay-before
           memsup, inherit and before with --no-trace --poll-ms 1000: the
           sampler nearly silent, so that memsup's CPU is its relay's (not
           in the default list);
with the output sent (--sink) to a pipe read by `cat > /dev/null` or to a
file.  The variants of one workload run back to back, --reps times
(interleaved: a load drift hits each alike).  Read:
  wall     seconds, from the start to the end of the command (bare) or of
           memsup;
  memsup   memsup's own CPU (utime+stime), the record's memsup_cpu_s: up to
           the moment the run is over and the relay has finished, before
           the pictures are drawn;
  share    memsup's CPU over the bare command's median wall, the target's
           measure;
  evidence the evidence directory's bytes (the sum of its files' sizes);
  log      stdout.log's bytes.
Medians (min-max).

Usage: python3 bench/relay_cost.py --builddir BUILD [--baseline OLD_MEMSUP]
       [--reps 5] [--work sort,tar] [--sink pipe,file] [--json RUNS.json]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

SORT_BYTES = 200_000_000
TAR_FILES, TAR_FILE_BYTES, TAR_TEXT_EVERY = 100, 1_000_000, 4

# 3 bytes in 256 of random input become a newline, the rest a letter: lines
# of 85 letters on average.
_TEXT = bytes((10 if b < 3 else 97 + b % 26) for b in range(256))


def text(rng, n):
    return rng.randbytes(n).translate(_TEXT)


def data_dir():
    d = Path(os.environ.get("TMPDIR", tempfile.gettempdir())) / \
        f"memtrace-bench-{os.getuid()}" / "relay"
    d.mkdir(parents=True, exist_ok=True)
    return d


def make_inputs(d):
    """The inputs, made once (a file `.done` says they are whole)."""
    sort_in = d / "sort-200mb-85.txt"
    if not (d / "sort-85.done").exists():
        rng = random.Random(30)
        with open(sort_in, "wb") as f:
            left = SORT_BYTES
            while left > 0:
                chunk = text(rng, min(left, 1 << 20))
                f.write(chunk)
                left -= len(chunk)
        # a last line that ends
        with open(sort_in, "r+b") as f:
            f.seek(-1, os.SEEK_END)
            f.write(b"\n")
        (d / "sort-85.done").write_text("")
    tree = d / "tree"
    if not (d / "tar.done").exists():
        tree.mkdir(exist_ok=True)
        rng = random.Random(31)
        for i in range(TAR_FILES):
            body = text(rng, TAR_FILE_BYTES) if i % TAR_TEXT_EVERY == 0 \
                else rng.randbytes(TAR_FILE_BYTES)
            (tree / f"f{i:03d}").write_bytes(body)
            os.utime(tree / f"f{i:03d}", (1_700_000_000, 1_700_000_000))
        (d / "tar.done").write_text("")
    return {"sort": (["sort", str(sort_in)], None),
            "tar": (["tar", "czf", "-", "tree"], str(d))}


def evidence_bytes(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


# variant: (which memsup, its options); bare runs the command alone
VARIANTS = {
    "bare": (None, []),
    "memsup": ("this", []),
    "inherit": ("this", ["--output", "inherit"]),
    "before": ("baseline", []),
    "relay": ("this", ["--no-trace", "--poll-ms", "1000"]),
    "relay-inherit": ("this", ["--no-trace", "--poll-ms", "1000", "--output", "inherit"]),
    "relay-before": ("baseline", ["--no-trace", "--poll-ms", "1000"]),
}


def one_run(variant, memsup, work, sink, tmp):
    cmd, cwd = work
    out = os.path.join(tmp, "ev")
    if variant != "bare":
        cmd = [memsup, "-q", "-o", out] + VARIANTS[variant][1] + ["--"] + cmd
    env = dict(os.environ, LC_ALL="C")
    reader = None
    if sink == "pipe":
        reader = subprocess.Popen(["cat"], stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL)
        stdout = reader.stdin
    else:
        stdout = open(os.path.join(tmp, "out"), "wb")
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, cwd=cwd, env=env)
    stdout.close()
    err = proc.stderr.read()
    _, status, _ = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if reader:
        reader.wait()
    if proc.returncode != 0:
        raise SystemExit(f"{benchlib.shell_quote(cmd)} exited {proc.returncode}: "
                         f"{err.decode(errors='replace')[:500]}")
    row = {"wall": wall, "memsup": None, "evidence": None, "log": None}
    if variant != "bare":
        with open(os.path.join(out, "resources.json")) as f:
            rec = json.load(f)
        row["memsup"] = rec["memsup_cpu_s"]
        row["evidence"] = evidence_bytes(out)
        row["log"] = rec["output"]["log_bytes"]
    # the next run starts clean: its evidence and the sink's file go
    subprocess.run(["rm", "-rf", out, os.path.join(tmp, "out")], check=True)
    return row


def fmt(values, spec):
    if not values or values[0] is None:
        return "-"
    med, lo, hi = benchlib.summary(values)
    return f"{med:{spec}} ({lo:{spec}}-{hi:{spec}})"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir", help="configured build tree (default: $MEMTRACE_BUILDDIR or .)")
    ap.add_argument("--baseline", help="an earlier memsup, run as the variant `before`")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--work", default="sort,tar")
    ap.add_argument("--sink", default="pipe,file")
    ap.add_argument("--variants", default="bare,memsup,inherit,before")
    ap.add_argument("--json", help="write the raw runs here")
    a = ap.parse_args(argv)
    build = benchlib.find_builddir(a.builddir)
    memsup = benchlib.memsup_path(build)
    if memsup is None:
        raise SystemExit("no memsup: --builddir names a built tree")
    variants = [v for v in a.variants.split(",")
                if VARIANTS[v][0] != "baseline" or a.baseline]
    works = make_inputs(data_dir())
    facts = benchlib.machine_facts()
    runs = {}
    for _ in range(a.reps):
        for work in a.work.split(","):
            for sink in a.sink.split(","):
                for variant in variants:
                    exe = a.baseline if VARIANTS[variant][0] == "baseline" else str(memsup)
                    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
                        runs.setdefault((work, sink, variant), []).append(
                            one_run(variant, exe, works[work], sink, tmp))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"/".join(k): v for k, v in runs.items()}, f, indent=1)
    print(benchlib.facts_line(facts))
    print(f"load average at the end {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    print(f"{a.reps} interleaved repetitions; medians (min-max); share = memsup CPU / "
          "the bare command's median wall")
    print()
    header = ["work", "sink", "variant", "wall s", "memsup CPU s", "share", "evidence MB",
              "stdout.log bytes"]
    rows = []
    for work in a.work.split(","):
        for sink in a.sink.split(","):
            bare = statistics.median(r["wall"] for r in runs[(work, sink, "bare")]) \
                if "bare" in variants else None
            for variant in variants:
                rs = runs[(work, sink, variant)]
                own = [r["memsup"] for r in rs]
                share = "-"
                if bare and own[0] is not None:
                    share = f"{100 * statistics.median(own) / bare:.1f}%"
                ev = [r["evidence"] / 1e6 for r in rs] if rs[0]["evidence"] is not None \
                    else [None]
                log = statistics.median(r["log"] for r in rs) \
                    if rs[0]["log"] is not None else "-"
                rows.append([work, sink, variant, fmt([r["wall"] for r in rs], ".2f"),
                             fmt(own, ".3f"), share, fmt(ev, ".2f"),
                             f"{log:.0f}" if log != "-" else "-"])
    print(benchlib.md_table(header, rows))


if __name__ == "__main__":
    sys.exit(main())
