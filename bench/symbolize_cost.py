#!/usr/bin/env python3
"""symbolize_cost.py: what naming the call sites by file and line costs at the end of a large run.

memsup names every sampled frame after the run: ELF symbols, then each
module's DWARF (found in the file, /usr/lib/debug/.build-id/ or by
.gnu_debuglink) read by binutils' addr2line, once per module.  This runs a
large traced workload in two modes, interleaved, --reps times:

  lines       the default: file:line, inlined frames (addr2line run through a
              bash wrapper that logs its CPU with `times`)
  names only  MEMSUP_ADDR2LINE= (no addr2line: the naming of before, the
              debug-file search included)

and reports, medians per mode: `finish` (the seconds memsup ran after the
command: the record's wall_s against memsup's own wall), memsup's own CPU in
that end phase (its utime + stime from /proc/PID/stat once it has exited,
before it is reaped, minus the record's memsup_cpu_s, taken when the run's
loop ended; 10 ms ticks), the CPU of the
addr2line runs and their count, and what the run's stacks.json holds
(modules with frames, modules whose lines were read, frames, frames with a
line).

Works (--work, comma-separated):
  build    `make -j2` of this project's own sources (copied from git and
           configured once; `make clean` before each run): about 2,300
           process images, compilers and shells, most without DWARF, libc
           and ld.so with libc6-dbg's
  images   2,000 runs of tests/progs/lines_sites (built with -g): 2,000
           images, one module with DWARF in the file

Run it through scripts/pids-guard.sh.  Needs addr2line and a build tree
(--builddir, default the source tree).
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

WRAPPER = """#!/bin/bash
# addr2line, then `times` appended to $A2L_LOG: this shell's CPU (user, sys)
# on one line, its children's (addr2line's) on the next; not in a pipeline,
# whose subshell would have no children
"{a2l}" "$@"
rc=$?
times >> "$A2L_LOG"
exit $rc
"""


def seconds(t):
    """bash's `times` figure, "1m2.345s", in seconds."""
    m, s = t.rstrip("s").split("m")
    return int(m) * 60 + float(s)


def run(memsup, out, cmd, cwd, env):
    """memsup on cmd; its own CPU (every thread, not its children's) read
    from /proc/PID/stat once it has exited and before it is reaped."""
    argv = [str(memsup), "-q", "-o", str(out), "--"] + cmd
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    wall = time.monotonic() - t0
    f = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
    own_cpu = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    if p.wait() != 0:
        raise SystemExit(f"{cmd[:4]}... under memsup exited {p.returncode}")
    rec = json.loads((out / "resources.json").read_text())
    st = json.loads((out / "stacks.json").read_text())
    mods = [m for m in st["modules"] if m.get("frames")]
    return {
        "wall": wall,
        "finish": wall - rec["wall_s"],
        "end_cpu": own_cpu - rec["memsup_cpu_s"],
        "modules": len(mods),
        "read": sum(1 for m in mods if m.get("lines") == "read"),
        "frames": len(st["frames"]),
        "with_line": sum(1 for f in st["frames"] if f.get("line")),
        "images": len(st["images"]),
        "stacks_json": (out / "stacks.json").stat().st_size,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--builddir")
    ap.add_argument("--work", default="build,images")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--images", type=int, default=2000)
    args = ap.parse_args()
    benchlib.require_pids_guard("symbolize_cost.py", "a build of thousands of processes")
    builddir = benchlib.find_builddir(args.builddir)
    memsup = benchlib.memsup_path(builddir)
    a2l = shutil.which("addr2line")
    if not a2l:
        raise SystemExit("symbolize_cost.py needs addr2line (binutils)")
    tmp = Path(tempfile.mkdtemp(prefix="memtrace-symbolize-"))
    wrapper = tmp / "addr2line-timed"
    wrapper.write_text(WRAPPER.format(a2l=a2l))
    wrapper.chmod(0o755)
    print(benchlib.facts_line(benchlib.machine_facts()))
    print(f"memsup: {memsup} (commit {benchlib.git_head()})")
    try:
        for work in args.work.split(","):
            if work == "build":
                src = tmp / "src"
                files = subprocess.run(["git", "-C", str(benchlib.SRC_DIR), "ls-files", "-z"],
                                       capture_output=True, check=True).stdout.split(b"\0")
                for f in filter(None, files):
                    dst = src / f.decode()
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(benchlib.SRC_DIR / f.decode(), dst)
                subprocess.run("autoreconf -fi >/dev/null 2>&1 && ./configure --quiet >/dev/null",
                               shell=True, cwd=src, check=True)
                cmd, cwd = ["make", "-j2"], src
                title = "make -j2 of memtrace itself"

                def before():
                    subprocess.run(["make", "clean"], cwd=src, check=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            elif work == "images":
                prog = Path(builddir) / "tests" / "progs" / "lines_sites"
                if not prog.exists():
                    raise SystemExit(f"{prog}: build it first (make check TESTS=)")
                cmd = ["sh", "-c", f'i=0; while [ $i -lt {args.images} ]; do "{prog}" 0 '
                       '>/dev/null; i=$((i+1)); done']
                cwd, title = tmp, f"{args.images} runs of lines_sites"

                def before():
                    pass
            else:
                raise SystemExit(f"--work: '{work}' is neither build nor images")
            runs = {"lines": [], "names only": []}
            for rep in range(args.reps):
                for mode in runs:
                    before()
                    env = dict(os.environ)
                    log = tmp / "a2l.log"
                    log.write_text("")
                    env["A2L_LOG"] = str(log)
                    env["MEMSUP_ADDR2LINE"] = str(wrapper) if mode == "lines" else ""
                    out = tmp / f"ev-{work}-{rep}-{mode.replace(' ', '_')}"
                    r = run(memsup, out, cmd, cwd, env)
                    lines = [l.split() for l in log.read_text().splitlines() if l.strip()]
                    lines = lines[1::2]  # the children's line of each `times`
                    r["a2l_runs"] = len(lines)
                    r["a2l_cpu"] = sum(seconds(u) + seconds(s) for u, s in lines)
                    runs[mode].append(r)
                    shutil.rmtree(out, ignore_errors=True)
                    print(f"  {work} rep {rep} {mode}: " +
                          ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                                    for k, v in r.items()), flush=True)

            def med(mode, key):
                vals = [r[key] for r in runs[mode] if r[key] is not None]
                return statistics.median(vals) if vals else None
            print(f"\n### {title} (medians of {args.reps})\n")
            keys = [("wall", "wall s", 2), ("finish", "finish s", 3),
                    ("end_cpu", "memsup end CPU s", 3), ("a2l_runs", "addr2line runs", 0),
                    ("a2l_cpu", "addr2line CPU s", 3), ("images", "images sampled", 0),
                    ("modules", "modules with frames", 0), ("read", "modules with lines", 0),
                    ("frames", "frames", 0), ("with_line", "frames with a line", 0),
                    ("stacks_json", "stacks.json bytes", 0)]
            rows = []
            for mode in runs:
                row = [mode]
                for k, _, digits in keys:
                    v = med(mode, k)
                    row.append("-" if v is None else f"{v:.{digits}f}")
                rows.append(row)
            print(benchlib.md_table(["mode"] + [h for _, h, _ in keys], rows))
            print()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
