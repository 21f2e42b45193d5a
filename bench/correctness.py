#!/usr/bin/env python3
"""correctness.py: what libmemtrace, glibc's memusage and heaptrack report,
against the ground truth, on the same workloads as shim_overhead.py.

Ground truth comes from the workload programs themselves: bench/known_allocs
(a fixed sequence of malloc, calloc, posix_memalign, aligned_alloc, realloc,
anonymous mmap/munmap including a partial one, and a munmap of memory mapped
behind every tool's back) and bench/malloc_bench -u (10^6 mixed operations),
which both count their own calls and bytes and print them.  python3 and gcc
have no ground truth: the tools are shown side by side.

How each tool is read:
  libmemtrace      MEMTRACE_OUT=<dir>/%p.json (its JSON summary, one per
                   process), and a second run with MEMTRACE_DIR whose record
                   files are read through common/record.h (mtrecord.py)
  memusage         LD_PRELOAD=libmemusage.so, its stderr summary ("heap total",
                   "heap peak", the call table); "memusage --mmap" adds
                   MEMUSAGE_TRACE_MMAP=1 (what `memusage --mmap` sets)
  heaptrack        `heaptrack -o FILE cmd`, then the summary of `heaptrack_print`
                   ("peak heap memory consumption" is rounded to 3 digits, in
                   units of 10^3 bytes)
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # keep the source tree clean (distcheck, git status)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
import mtrecord  # noqa: E402
from shim_overhead import PY_DICTS, default_gcc_sources, gcc_flags  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TOOLS = ["libmemtrace", "memusage", "memusage --mmap", "heaptrack"]


def fmt(n):
    if n is None:
        return "-"
    if isinstance(n, str):
        return n
    return f"{n:,}"


# ---------------------------------------------------------------- tool readers
def parse_memusage(text):
    """One dict per process summary found in memusage's stderr."""
    text = ANSI.sub("", text)
    out = []
    for block in text.split("Memory usage summary:")[1:]:
        m = re.search(r"heap total: (\d+), heap peak: (\d+)", block)
        if not m:
            continue
        s = {"heap_total": int(m.group(1)), "heap_peak": int(m.group(2)), "calls": {},
             "bytes": {}}
        for line in block.splitlines():
            row = re.match(r"^\s*([a-z]+(?:\([rwa]\))?)\|\s+(\d+)\s+(\d+)", line)
            if row:
                s["calls"][row.group(1)] = int(row.group(2))
                s["bytes"][row.group(1)] = int(row.group(3))
        out.append(s)
    return out


def lm_get(obj, *names):
    """A figure from a libmemtrace JSON object, whatever nesting it uses."""
    for name in names:
        cur = obj
        ok = True
        for part in name.split("."):
            if isinstance(cur, dict) and part in cur:
                cur = cur[part]
            else:
                ok = False
                break
        if ok:
            return cur
    return None


def lm_summary(obj):
    """Normalise one libmemtrace JSON summary to the record's field names."""
    calls = lm_get(obj, "calls", "heap.calls") or {}
    if isinstance(calls, list):
        calls = dict(zip([c.lower() for c in mtrecord.CALLS], calls))
    return {
        "pid": lm_get(obj, "pid", "identity.pid"),
        "heap_peak": lm_get(obj, "heap_peak", "heap.peak", "heap.peak_bytes"),
        "heap_current": lm_get(obj, "heap_current", "heap.current", "heap.current_bytes"),
        "heap_requested_total": lm_get(obj, "heap_requested_total", "heap.requested_total",
                                       "heap.requested_total_bytes"),
        "map_anon_peak": lm_get(obj, "map_anon_peak", "map.anon_peak", "mmap.anon_peak",
                                "maps.anon_peak", "map.anon.peak", "mmap.anon.peak"),
        "map_anon_current": lm_get(obj, "map_anon_current", "map.anon_current",
                                   "mmap.anon_current", "maps.anon_current",
                                   "map.anon.current", "mmap.anon.current"),
        "total_peak": lm_get(obj, "total_peak", "total.peak", "heap_and_maps.peak"),
        "calls": calls,
    }


class Tools:
    def __init__(self, args):
        self.args = args
        self.builddir = benchlib.find_builddir(args.builddir)
        self.shim = Path(args.shim) if args.shim else benchlib.shim_path(self.builddir)
        self.memusage = benchlib.first_existing(benchlib.LIBMEMUSAGE_CANDIDATES)
        self.heaptrack = benchlib.which("heaptrack")
        self.tmp = Path(tempfile.mkdtemp(prefix="mt-correct-"))

    def clean_env(self):
        env = dict(os.environ)
        for k in ("LD_PRELOAD", "MEMTRACE_DIR", "MEMTRACE_OUT", "MEMTRACE_QUIET",
                  "MEMUSAGE_OUTPUT", "MEMUSAGE_TRACE_MMAP", "DUMP_HEAPTRACK_OUTPUT"):
            env.pop(k, None)
        return env

    def run(self, argv, env, cwd=None):
        return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True,
                              errors="replace", stdin=subprocess.DEVNULL)

    def libmemtrace(self, argv, cwd, tag):
        if not self.shim:
            return None
        d = self.tmp / f"lm-{tag}"
        d.mkdir()
        env = self.clean_env()
        env.update(LD_PRELOAD=str(self.shim), MEMTRACE_QUIET="1",
                   MEMTRACE_OUT=str(d / "%p.json"))
        p = self.run(argv, env, cwd)
        procs = []
        for f in sorted(d.glob("*.json")):
            try:
                procs.append(lm_summary(json.loads(f.read_text())))
            except ValueError as e:
                procs.append({"error": f"{f.name}: {e}"})
        # the same through MEMTRACE_DIR, read as record files
        rd = self.tmp / f"lm-dir-{tag}"
        rd.mkdir()
        env = self.clean_env()
        env.update(LD_PRELOAD=str(self.shim), MEMTRACE_QUIET="1", MEMTRACE_DIR=str(rd))
        self.run(argv, env, cwd)
        try:
            recs = mtrecord.read_dir(rd)
        except (OSError, subprocess.CalledProcessError) as e:
            recs = [{"error": str(e)}]
        return {"rc": p.returncode, "stdout": p.stdout, "procs": procs, "records": recs}

    def memusage_run(self, argv, cwd, trace_mmap):
        if not self.memusage:
            return None
        env = self.clean_env()
        env["LD_PRELOAD"] = self.memusage
        if trace_mmap:
            env["MEMUSAGE_TRACE_MMAP"] = "1"
        p = self.run(argv, env, cwd)
        return {"rc": p.returncode, "stdout": p.stdout, "procs": parse_memusage(p.stderr)}

    def heaptrack_run(self, argv, cwd, tag):
        if not self.heaptrack:
            return None
        base = self.tmp / f"ht-{tag}"
        p = self.run([self.heaptrack, "-o", str(base)] + argv, self.clean_env(), cwd)
        files = sorted(self.tmp.glob(f"ht-{tag}.*"))
        if not files:
            return {"rc": p.returncode, "error": "no heaptrack output"}
        pr = subprocess.run(["heaptrack_print", "-f", str(files[0]), "-p", "0", "-a", "0",
                             "-T", "0"], capture_output=True, text=True, errors="replace")
        res = {"rc": p.returncode, "print": {}}
        for key, pat in (("calls", r"calls to allocation functions: (\d+)"),
                         ("peak_str", r"peak heap memory consumption: (\S+)"),
                         ("leaked_str", r"total memory leaked: (\S+)")):
            m = re.search(pat, pr.stdout)
            res["print"][key] = (int(m.group(1)) if key == "calls" else m.group(1)) if m else None
        # heaptrack_print rounds to three digits in units of 10^3 (K, M, G);
        # its massif output (-M) is exact but only at sampled snapshots, which
        # miss the peak of a busy program, so the printed figure it is.
        res["peak"] = res["print"]["peak_str"]
        res["stdout"] = p.stdout
        return res


# ---------------------------------------------------------------- workloads
def truth_of(stdout):
    for line in stdout.splitlines()[::-1]:
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


def known_allocs_table(t, truth, lm, mu, mum, ht):
    lmp = lm["procs"][0] if lm and lm["procs"] else None
    lmr = lm["records"][0] if lm and lm["records"] and "error" not in lm["records"][0] else None
    mup = mu["procs"][0] if mu and mu["procs"] else None
    mump = mum["procs"][0] if mum and mum["procs"] else None
    c = truth["calls"]

    def lmc(name):
        if not lmp:
            return None
        v = lmp["calls"].get(name)
        r = lmr["calls"].get(name) if lmr else None
        return v if r is None or r == v else f"{v} (record: {r})"

    # Usable sizes depend on the allocator's state (glibc's mmap threshold
    # moves when an mmapped block is freed), so the usable truth for the
    # libmemtrace column is the one the program printed in that same run.
    same = truth_of(lm["stdout"]) if lm else None

    def lmf(key, truth_key=None):
        if not lmp:
            return None
        v = lmp.get(key)
        r = lmr.get(key) if lmr else None
        if v is None:
            return f"(record: {fmt(r)})" if r is not None else None
        out = fmt(v) if r is None or r == v else f"{fmt(v)} (record: {fmt(r)})"
        if truth_key and same and same.get(truth_key) != truth.get(truth_key):
            out += f" (truth in that run: {fmt(same.get(truth_key))})"
        return out

    def muc(p, name):
        return p["calls"].get(name) if p else None

    rows = [
        ["heap peak, requested bytes", fmt(truth["heap_requested_peak"]),
         "(counts usable size)", fmt(mup and mup["heap_peak"]),
         fmt(mump and mump["heap_peak"]) + " (heap+mmaps)" if mump else "-",
         fmt(ht and ht.get("peak"))],
        ["heap peak, usable bytes", fmt(truth["heap_usable_peak"]),
         lmf("heap_peak", "heap_usable_peak"),
         "-", "-", "-"],
        ["heap requested total", fmt(truth["heap_requested_total"]),
         lmf("heap_requested_total"), fmt(mup and mup["heap_total"]),
         fmt(mump and mump["heap_total"]), "-"],
        ["heap live at exit", fmt(truth["heap_end"]), lmf("heap_current"), "-", "-",
         ht["print"]["leaked_str"] if ht and "print" in ht else "-"],
        ["anon mmap peak", fmt(truth["map_anon_peak"]), lmf("map_anon_peak"), "not traced",
         "not kept apart", "not tracked"],
        ["anon mmap at exit (after the unseen munmap)", fmt(truth["map_end"]),
         lmf("map_anon_current"), "not traced", "-", "not tracked"],
        ["heap+mmap peak (usable)", fmt(truth["total_usable_peak"]),
         lmf("total_peak", "total_usable_peak"),
         "-", fmt(mump and mump["heap_peak"]), "-"],
        ["heap+mmap peak (requested)", fmt(truth["total_requested_peak"]), "-", "-",
         fmt(mump and mump["heap_peak"]), "-"],
    ]
    for name, mu_name in (("malloc", "malloc"), ("calloc", "calloc"), ("realloc", "realloc"),
                          ("free", "free"), ("posix_memalign", None), ("aligned_alloc", None),
                          ("mmap", "mmap(a)"), ("munmap", "munmap")):
        rows.append([f"calls: {name}", fmt(c[name]), fmt(lmc(name)),
                     fmt(muc(mup, mu_name)) if mu_name else "not hooked",
                     fmt(muc(mump, mu_name)) if mu_name else "not hooked",
                     "-"])
    rows.append(["calls: all allocation functions", fmt(c["malloc"] + c["calloc"] + c["realloc"]
                                                         + c["posix_memalign"]
                                                         + c["aligned_alloc"]),
                 "-", "-", "-", fmt(ht and ht["print"].get("calls"))])
    return benchlib.md_table(["figure", "ground truth"] + TOOLS, rows)


def malloc_table(truth, lm, mu, ht):
    lmp = lm["procs"][0] if lm and lm["procs"] else None
    mup = mu["procs"][0] if mu and mu["procs"] else None
    same = truth_of(lm["stdout"]) if lm else None
    lm_usable = fmt(lmp and lmp.get("heap_peak"))
    if same and same.get("usable_peak") != truth["usable_peak"]:
        lm_usable += f" (truth in that run: {fmt(same.get('usable_peak'))})"
    rows = [
        ["heap peak, requested bytes", fmt(truth["requested_peak"]), "(counts usable size)",
         fmt(mup and mup["heap_peak"]), fmt(ht and ht.get("peak"))],
        ["heap peak, usable bytes", fmt(truth["usable_peak"]), lm_usable, "-", "-"],
        ["heap requested total", fmt(truth["requested_total"]),
         fmt(lmp and lmp.get("heap_requested_total")),
         fmt(mup and mup["heap_total"]) + " (realloc: growth only)" if mup else "-", "-"],
    ]
    for name in ("malloc", "calloc", "realloc", "free"):
        rows.append([f"calls: {name}", fmt(truth[name]),
                     fmt(lmp and lmp["calls"].get(name)),
                     fmt(mup and mup["calls"].get(name)), "-"])
    rows.append(["calls: all allocation functions",
                 fmt(truth["malloc"] + truth["calloc"] + truth["realloc"]), "-", "-",
                 fmt(ht and ht["print"].get("calls"))])
    return benchlib.md_table(["figure", "ground truth", "libmemtrace", "memusage", "heaptrack"],
                             rows)


def tree_table(lm, mu, ht):
    def lm_cell(f):
        if not lm:
            return "-"
        vals = [p.get(f) for p in lm["procs"] if p.get(f) is not None]
        return fmt(max(vals)) if vals else "-"
    rows = [
        ["process summaries written", fmt(len(lm["procs"])) if lm else "-",
         fmt(len(mu["procs"])) if mu else "-", "1 (the first process only)" if ht else "-"],
        ["largest per-process heap peak", lm_cell("heap_peak") + " (usable)",
         fmt(max(p["heap_peak"] for p in mu["procs"])) if mu and mu["procs"] else "-",
         fmt(ht and ht.get("peak"))],
        ["largest per-process heap+mmap peak", lm_cell("total_peak"), "-", "-"],
        ["malloc-family calls, all processes",
         fmt(sum(sum(v for k, v in p["calls"].items() if k in ("malloc", "calloc", "realloc",
                                                              "reallocarray", "posix_memalign",
                                                              "aligned_alloc", "memalign",
                                                              "valloc", "pvalloc"))
                 for p in lm["procs"])) if lm else "-",
         fmt(sum(sum(v for k, v in p["calls"].items() if k in ("malloc", "calloc", "realloc"))
                 for p in mu["procs"])) if mu else "-",
         fmt(ht and ht["print"].get("calls"))],
    ]
    return benchlib.md_table(["figure", "libmemtrace", "memusage", "heaptrack"], rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--builddir")
    ap.add_argument("--shim")
    ap.add_argument("--ops", type=int, default=1000000)
    ap.add_argument("--json", help="write everything the tools said here")
    args = ap.parse_args(argv)
    t = Tools(args)
    facts = benchlib.machine_facts()
    raw = {}
    out = [f"Run: {benchlib.facts_line(facts)}", "",
           f"Command: `{benchlib.shell_quote(['python3', 'bench/correctness.py'] + (argv if argv is not None else sys.argv[1:]))}`",
           ""]

    ka = str(benchlib.bench_program(t.builddir, "known_allocs"))
    truth = truth_of(t.run([ka], t.clean_env()).stdout)
    lm = t.libmemtrace([ka], None, "ka")
    mu = t.memusage_run([ka], None, False)
    mum = t.memusage_run([ka], None, True)
    ht = t.heaptrack_run([ka], None, "ka")
    raw["known_allocs"] = {"truth": truth, "libmemtrace": lm, "memusage": mu,
                           "memusage_mmap": mum, "heaptrack": ht}
    out += ["#### known_allocs (bench/known_allocs.c)", "",
            known_allocs_table(t, truth, lm, mu, mum, ht), ""]

    mb = str(benchlib.bench_program(t.builddir, "malloc_bench"))
    mtruth = truth_of(t.run([mb, "-u", "1", str(args.ops)], t.clean_env()).stdout)
    argv_mb = [mb, "1", str(args.ops)]
    lm = t.libmemtrace([mb, "-u", "1", str(args.ops)], None, "mb")
    mu = t.memusage_run(argv_mb, None, False)
    ht = t.heaptrack_run(argv_mb, None, "mb")
    raw["malloc_bench"] = {"truth": mtruth, "libmemtrace": lm, "memusage": mu, "heaptrack": ht}
    out += [f"#### malloc_bench 1 {args.ops} (ground truth from `malloc_bench -u 1 {args.ops}`)",
            "", malloc_table(mtruth, lm, mu, ht), ""]

    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    argv_py = [py, "-c", PY_DICTS]
    lm = t.libmemtrace(argv_py, None, "py")
    mu = t.memusage_run(argv_py, None, False)
    ht = t.heaptrack_run(argv_py, None, "py")
    raw["python"] = {"libmemtrace": lm, "memusage": mu, "heaptrack": ht}
    out += ["#### python (no ground truth)", "", tree_table(lm, mu, ht), ""]

    gcc_dir = t.tmp / "gcc"
    gcc_dir.mkdir()
    srcs = default_gcc_sources(t.builddir)
    argv_gcc = ["gcc"] + gcc_flags(t.builddir) + [str(s) for s in srcs]
    lm = t.libmemtrace(argv_gcc, gcc_dir, "gcc")
    mu = t.memusage_run(argv_gcc, gcc_dir, False)
    ht = t.heaptrack_run(argv_gcc, gcc_dir, "gcc")
    raw["gcc"] = {"libmemtrace": lm, "memusage": mu, "heaptrack": ht}
    out += [f"#### gcc (no ground truth; {len(srcs)} sources, one cc1 and one as per file: "
            + " ".join(s.name for s in srcs) + ")", "", tree_table(lm, mu, ht), ""]

    print("\n".join(out))
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1, default=str))
    shutil.rmtree(t.tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
