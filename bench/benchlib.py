"""benchlib.py: what the bench/ drivers share: finding the programs under test,
machine facts, order statistics, Markdown tables.

Python 3 standard library only.  Nothing here times anything by itself.
"""
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
SRC_DIR = BENCH_DIR.parent

LIBMEMUSAGE_CANDIDATES = [
    "/usr/lib/x86_64-linux-gnu/libmemusage.so",
    "/usr/lib/aarch64-linux-gnu/libmemusage.so",
    "/usr/lib64/libmemusage.so",
    "/usr/lib/libmemusage.so",
]
HEAPTRACK_PRELOAD_CANDIDATES = [
    "/usr/lib/heaptrack/libheaptrack_preload.so",
    "/usr/lib/x86_64-linux-gnu/heaptrack/libheaptrack_preload.so",
    "/usr/lib64/heaptrack/libheaptrack_preload.so",
]
BENCH_PROGRAMS = ("malloc_bench", "known_allocs", "sleep_tree", "wake_floor")


def first_existing(paths):
    for p in paths:
        if os.path.exists(p):
            return p
    return None


def find_builddir(arg):
    """The configured build directory: --builddir, $MEMTRACE_BUILDDIR, or cwd."""
    for cand in (arg, os.environ.get("MEMTRACE_BUILDDIR"), os.getcwd()):
        if cand and (Path(cand) / "config.h").exists():
            return Path(cand).resolve()
    return Path(arg).resolve() if arg else None


def shim_path(builddir):
    if builddir is None:
        return None
    p = builddir / "preload" / ".libs" / "libmemtrace.so"
    return p if p.exists() else None


def memsup_path(builddir):
    if builddir is None:
        return None
    p = builddir / "supervisor" / "memsup"
    return p if p.exists() else None


def bench_program(builddir, name):
    """bench/NAME from the build directory (`make bench-programs` builds it);
    failing that, compile bench/NAME.c with cc -O2 into a private temp dir."""
    if builddir is not None:
        p = builddir / "bench" / name
        if p.exists():
            return p
    out = Path(tempfile.gettempdir()) / f"memtrace-bench-{os.getuid()}"
    out.mkdir(exist_ok=True)
    exe = out / name
    src = BENCH_DIR / f"{name}.c"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        cc = os.environ.get("CC", "cc")
        subprocess.run([cc, "-O2", "-g", "-pthread", "-o", str(exe), str(src)], check=True)
    return exe


def machine_facts():
    """One dict of what a reader needs to compare runs across machines."""
    libc = " ".join(platform.libc_ver())
    try:
        out = subprocess.run(["ldd", "--version"], capture_output=True, text=True).stdout
        libc = out.splitlines()[0].strip() if out else libc
    except OSError:
        pass
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "libc": libc,
        "python": sys.version.split()[0],
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
        "git": git_head(),
    }


def git_head():
    # A run from an exported tree (git archive) has no .git: the caller says.
    if os.environ.get("MEMTRACE_BENCH_COMMIT"):
        return os.environ["MEMTRACE_BENCH_COMMIT"]
    try:
        out = subprocess.run(["git", "-C", str(SRC_DIR), "log", "-1", "--format=%h %s"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def facts_line(f):
    return (f"{f['date_utc']}; nproc={f['nproc']} ({f['cpu']}); kernel {f['kernel']}; "
            f"{f['libc']}; Python {f['python']}; load average at start "
            f"{' '.join(f['loadavg'])}; commit {f['git']}")


def summary(values):
    """median, min, max of a non-empty list."""
    return statistics.median(values), min(values), max(values)


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def which(name):
    return shutil.which(name)


def require_pids_guard(who, why):
    """Stop unless this runs inside scripts/pids-guard.sh (a pids-limited
    cgroup of its own): what can make many processes never runs without
    one.  `why` says what needs it."""
    if not os.environ.get("MEMTRACE_PIDS_GUARD"):
        raise SystemExit(f"{who}: {why}: only inside a pids-limited cgroup; run it "
                         "through scripts/pids-guard.sh")


def shell_quote(argv):
    import shlex
    return " ".join(shlex.quote(str(a)) for a in argv)
