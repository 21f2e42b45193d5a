#!/usr/bin/env python3
# memsup.py: the Python drop-in for the original pure-Python measure_command,
# with phase markers and the layered snapshot of the calling process.
# Standard library only; Linux with /proc.  Installed by `make install` into
# $(pythondir); usable as it stands from a source or build tree.
"""Run a command under memsup from Python, mark phases, take snapshots.

measure_command(command, directory, *, wall_s=900.0, rss_mb=8192.0,
                cwd=None, env=None) -> dict
    The contract of the original measure_command (seed_measure.py, a
    pure-Python tool not in this repository), carried out by the memsup
    binary: the same validation, raising the same exception types before
    anything is created or started; the same child environment (the
    caller's, then OMP/OPENBLAS/MKL/NUMEXPR_NUM_THREADS=1 and
    JAX_PLATFORMS=cpu, then `env`); the same evidence directory
    (stdout.log, rss.jsonl, resources.json, plus memsup's own files).  The
    returned dict is resources.json as memsup wrote it.

    The original keys, same meaning and units (sizes decimal MB, times s):
        command, exit_code (negative signal number for a signal; -9 for a
        budget kill), reason (null, "wall_budget_exceeded",
        "rss_budget_exceeded"), wall_s, peak_tree_rss_mb, poll_s (0.01),
        rss_budget_mb, wall_budget_s, scope, limitation
    memsup's additions (see memsup(1), RECORD KEYS): peak_mb (the answer:
        the most the whole tree held at once), peak_source ("cgroup": the
        kernel's exact peak of the run's cgroup; "polled_pss" or
        "polled_rss" without a memory cgroup), peak_at_s, peak_breakdown
        (what the cgroup's peak was made of), max_procs_budget,
        signal, exit_status, error, pid, peak_tree_rss_at_s, samples,
        max_processes, leftover_processes_killed, orphans_reaped,
        orphans_reaped_total, rusage_children_maxrss_mb,
        poll_interval_p99_s, memsup_cpu_s, discovery, containment (the
        run's own cgroup, or the /proc scan and why; cgroups_left names a
        cgroup it could not remove), mem_max_mb,
        peak_cgroup_mb (the kernel's exact peak of that cgroup),
        cgroup_memory_at_end, oom_kills, oom (each OOM kill of the tree:
        its victim, the limit that fired, the tree as it came; read_oom
        below), forks_refused, notes, grace_s, cwd,
        env (the -e overrides: the defaults above and `env`),
        memsup_version, started_at, traced, processes_traced,
        processes_sampled, peak_heap_mb, peak_mapped_mb, peak_pss_mb,
        blind_spots, records_not_believed and records_not_believed_total
        (records left out of every figure: forged, or for no process of
        the tree), and (newer memsup) meta, markers, phases, sampling,
        slurm (the Slurm job memsup ran in, and the range Slurm's MaxRSS
        can read of the run; null outside Slurm), output
        (always {"mode": "log", ...} here: the command's stdout and stderr
        go to stdout.log only, as in the original, never to this process).
    Where the values differ from the original's: `scope` reads "command
    launch ..." (memsup measures the command, not an interpreter); `reason`
    may also be "interrupted" (memsup got SIGINT/SIGTERM/SIGHUP/SIGQUIT
    from someone else) or "supervisor_killed" (memsup itself was killed;
    its sentinel ended the tree and wrote that), "procs_budget_exceeded"
    and "mem_limit_exceeded" never happen here (no --max-procs or
    --mem-max is passed).

    Raises (all before any side effect unless noted):
        ValueError         a bad command, budget or env (as the original;
                           a budget too large for a float too, where the
                           original let float()'s OverflowError out)
        TypeError          cwd or directory is not a path (as the
                           original)
        FileNotFoundError, NotADirectoryError   cwd missing / not a directory
        RuntimeError       no Linux /proc; no memsup binary found (an
                           addition); memsup failed in a way that has no
                           errno (exit 125)
        FileExistsError    the directory exists
        OSError            the directory cannot be created (errno from
                           memsup's message); the command cannot start:
                           FileNotFoundError for a missing executable,
                           PermissionError when it cannot be executed, as
                           the original's Popen raised.  Then, unlike the
                           original, the evidence directory is complete
                           and the exception's `record` attribute holds
                           its record (reason "start_failed").

mark(label) -> bool
    One phase marker: a line in the file $MEMSUP_MARK names (memsup creates
    it and exports its path), else memtrace_mark() when libmemtrace.so is
    loaded in this process, else nothing.  True when the marker went
    somewhere.  Never raises for the marker channel's I/O; TypeError for a
    label that is not a str.  From a shell: echo label >> "$MEMSUP_MARK".

take_snapshot(label) -> MemorySnapshot
    The original tool's layered snapshot of this process (VmRSS, VmPeak,
    getrusage maxrss of itself and its children, a heap figure), in its
    units (MiB: kB / 1024 and bytes / 2**20), plus vm_hwm_mb and
    heap_source: "shim" when libmemtrace.so is loaded (its heap_current /
    heap_peak, malloc_usable_size bytes of every malloc-family call, C and
    Python alike), else "tracemalloc" (Python's heap, 0 unless tracemalloc
    is tracing, as in the original tool).

read_oom(record) -> OomKills
    The OOM kills of a record (the dict measure_command returns, or any
    resources.json loaded with json), checked as memsup report and memsup
    diff check them: OomKills(count, kills).  count is how many processes
    of the tree the kernel's OOM killer took -- the kernel's count
    (oom_kills), or the kills memsup saw when they are more: those listed
    and oom_unlisted -- or None when
    memsup could not see OOM kills (the record's oom is null: no memory
    cgroup, no kernel log; never 0 then), or for a record of a memsup before
    the list, its oom_kills alone.  kills is the list as the record has it
    (at most 16, in the order memsup saw them): each {"at_s", "woken_by",
    "after_event_ms", "kernel_at_s", "source", "evidence", "victim": {"pid"
    (None: no candidate), "gen", "comm", "exe", "argv", "lineage",
    "rss_mb", "anon_rss_mb", "file_rss_mb", "shmem_rss_mb", "heap_mb",
    "top_sites"}, "limit": {"by" ("run", "inside", "above", "machine",
    "unknown"), "cgroup", "limit_mb", "constraint"}, "tree": {...} or None}
    (see memsup(1), RECORD KEYS).  A key that is absent reads as None where
    memsup may write null; ValueError for an oom that is not what memsup
    writes, naming the key: 'resources.json: "oom"[0].victim: not an
    object'.

read_records(directory) -> dict
    The shim's records of an evidence directory, {(pid, gen): bytes}, each
    the record's bytes as common/record.h lays them out (8192, zero
    padded): from records/<pid>.<gen>.mtr while that file is whole, else
    from records.fold, where memsup folds the records of ended images (the
    newest copy of an image wins).  A torn last fold entry is skipped, and
    so is what memsup and the shim do not take for a record either: a file
    named otherwise than "<pid>.<gen>.mtr" (no leading zeros), of another
    size, magic, version or layout, with fields out of range, or of
    another image than its name says (common/imagename.h, filecheck.h).

read_stacks(directory) -> dict
    The shim's stacks files (sampled call sites) of an evidence directory,
    {(pid, gen): bytes}, each the published part of the file as
    common/stacks.h lays it out: its header (header_bytes), then its
    module_count module entries, then its stack_count stack entries, by the
    header's own sizes: from records/<pid>.<gen>.mts while the run goes on
    (or when memsup could not pack it), else from stacks.fold, where memsup
    packs them once stacks.json is written.  A torn last entry is skipped.
    After the stacks come the code_count entries of the file's code table
    (CPython code objects, when the image is a Python the shim read).

read_sites(directory) -> dict
    The same stacks files decoded, {(pid, gen): image}: image is {"pid",
    "gen", "python", "stacks"}.  "python" is null for an image without
    CPython, else as stacks.json says it ({"version": "3.12.1", "frames":
    "python" or "native_only_unknown_version", "python_samples",
    "python_frames", "truncated_samples", "code_objects"}).  Each stack is
    {"flags", "python" (it ends with Python frames), "live_bytes",
    "live_count", "peak_bytes", "peak_count", "total_bytes", "total_count"
    (estimated bytes and samples: live now, live at the image's peak, ever
    sampled), "frames"}; its frames are innermost first: native ones
    {"pc", "module" (the mapped file's path, null when outside every
    module), "file_offset"} (no symbols: memsup's stacks.json names them),
    then its Python frames (CPython 3.11, 3.12, 3.13), innermost first,
    {"function" (the qualified name), "file", "line" (null when unknown),
    "python": True, "entry" (entered from C: its run of Python frames ends
    there and belongs to the next native evaluation-loop frame)}: the
    frames and lines stacks.json gives.  A chain deeper than the shim
    keeps has its innermost and outermost frames and between them one
    {"function": "<N Python frames elided>", "file": None, "line": None,
    "python": True, "entry": False, "elided": N, "elided_entries": M (of
    them, entered from C)}.

read_processes(directory) -> list
    processes.json of an evidence directory, one dict per process image in
    the file's order, each with every key memsup(1) lists: memsup leaves out
    a key whose value is its default (null, false, 0, an empty list, a
    record's figure of 0 or an object of them; and traced, sampled,
    lineage.parent_pid, vm_hwm_kb and vm_hwm_from where other keys of the
    image say them), and this puts them back, so that an image reads the
    same as in a file memsup wrote with every key (an older memsup's too,
    which reads as it stands).  ValueError when the file is not a JSON array
    of objects.

read_run(directory) -> dict
    resources.json of an evidence directory as the run it describes, by the
    rules memsup report and memsup diff read it with (supervisor/evidence/
    read.h): "state" is "ended", "killed" (memsup was killed and its
    sentinel closed the record), "running" (not over, or memsup and its
    sentinel were killed) or "start_failed"; "answer_mb" is peak_mb, or,
    without one (a killed memsup, a memsup before the answer), the polled
    RSS peak with "source" "polled_rss" (None for a command that never
    started); "broken" is "" or the first problem of a record that is not
    running (no command, wall_s or peak_tree_rss_mb; a forged "oom");
    "has_processes" says whether processes.json is to be expected;
    "comparable" whether memsup diff compares the run (ended, not broken,
    with an answer: a killed run's figures are a lower bound); "record" is the record itself.  ValueError
    when the file is not a JSON object (OSError when it cannot be read).

memsup is found through $MEMSUP, else next to this file in a build tree
(../supervisor/memsup), else where `make install` put it, else on PATH.
"""
from __future__ import annotations

import errno
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MemorySnapshot", "OomKills", "find_memsup", "mark", "measure_command", "read_oom",
           "read_processes", "read_records", "read_run", "read_sites", "read_stacks", "take_snapshot"]

# `make install` rewrites this line with $(bindir) in the copy it installs.
_INSTALLED_BINDIR = None

# The original measure_command's child environment defaults, applied before
# the caller's env.
_CHILD_ENV_DEFAULTS = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "JAX_PLATFORMS": "cpu",
}

_MEMSUP_ERROR = 125  # memsup's own failure (memsup(1), EXIT STATUS)


# ---------------------------------------------------------------------------
# measure_command
# ---------------------------------------------------------------------------

def _check_command(command: Any) -> list[str]:
    if not isinstance(command, list) or len(command) == 0:
        raise ValueError("command must be a non-empty list of strings")
    if not all(isinstance(arg, str) and "\0" not in arg for arg in command):
        raise ValueError("command items must be strings without NUL")
    if command[0] == "":
        raise ValueError("command executable must not be empty")
    return list(command)


def _check_budget(name: str, value: Any) -> float:
    message = f"{name} must be a positive finite number"
    # bool is an int subclass: True is not a budget.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(message)
    try:
        number = float(value)
    except OverflowError:  # an int beyond float range
        raise ValueError(message) from None
    if math.isnan(number) or math.isinf(number) or number <= 0.0:
        raise ValueError(message)
    return number


def _check_env(env: Any) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise ValueError("env must be a string mapping")
    checked: dict[str, str] = {}
    for key, value in env.items():
        if not isinstance(key, str) or key == "" or "=" in key or "\0" in key:
            raise ValueError("env keys must be non-empty strings without '=' or NUL")
        if not isinstance(value, str) or "\0" in value:
            raise ValueError("env values must be strings without NUL")
        checked[key] = value
    return checked


def _check_cwd(cwd: Any) -> Path | None:
    if cwd is None:
        return None
    where = Path(cwd).resolve()  # TypeError for a non-path, as the original
    if not where.exists():
        raise FileNotFoundError(f"cwd does not exist: {where}")
    if not where.is_dir():
        raise NotADirectoryError(f"cwd is not a directory: {where}")
    return where


def _check_platform() -> None:
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc"):
        raise RuntimeError("measure_command requires Linux with /proc support")


def _is_program(path: str | os.PathLike) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_memsup() -> str:
    """Path of the memsup binary: $MEMSUP, the build tree, the install, PATH.

    Raises RuntimeError naming every place looked at when there is none.
    """
    looked = []
    named = os.environ.get("MEMSUP")
    if named:
        if _is_program(named):
            return os.path.abspath(named)
        raise RuntimeError(f"MEMSUP={named} is not an executable file")
    # scripts/memsup.py in a source tree configured in place, or the copy
    # a build tree makes (python/memsup.py): both sit beside supervisor/.
    here = os.path.dirname(os.path.realpath(__file__))
    candidates = [os.path.join(here, os.pardir, "supervisor", "memsup")]
    if _INSTALLED_BINDIR:
        candidates.append(os.path.join(_INSTALLED_BINDIR, "memsup"))
    for candidate in candidates:
        looked.append(os.path.normpath(candidate))
        if _is_program(candidate):
            return os.path.normpath(os.path.abspath(candidate))
    on_path = shutil.which("memsup")
    if on_path:
        return on_path
    looked.append("PATH")
    raise RuntimeError(
        "memsup binary not found (looked in " + ", ".join(looked)
        + "): set MEMSUP to its path")


def _errno_of(text: str) -> int | None:
    """The errno whose strerror() ends `text` ("mkdir 'x': Permission denied")."""
    tail = text.rstrip().rsplit(": ", 1)[-1]
    for number in sorted(errno.errorcode):
        if os.strerror(number) == tail:
            return number
    return None


def _memsup_failed(stderr: str, directory: Path) -> Exception:
    """The exception for memsup's exit 125, from its one-line message."""
    lines = [line for line in stderr.splitlines() if line.startswith("memsup:")]
    message = lines[-1] if lines else (stderr.strip() or "memsup failed (exit 125)")
    if "already exists" in message:
        return FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(directory))
    number = _errno_of(message)
    if number is not None:  # as the original's mkdir raised it
        return OSError(number, os.strerror(number), str(directory))
    return RuntimeError(message)


def _start_failure(record: dict, command: list[str], cwd: Path | None) -> OSError:
    """What the original's Popen raised for a command that could not start."""
    text = record.get("error") or ""
    number = _errno_of(text)
    if number is None:
        number = errno.ENOENT if record.get("exit_status") == 127 else errno.EACCES
    # memsup says "chdir: ..." when the working directory went away.
    filename = str(cwd) if text.startswith("chdir") and cwd is not None else command[0]
    failure = OSError(number, os.strerror(number), filename)
    failure.record = record
    return failure


class _interrupts_held:
    """Hold back SIGINT while memsup is being started, into `held`.

    Popen returns only after memsup has exec'd, and by then memsup may have
    started the command: a KeyboardInterrupt raised inside Popen would leave
    a run nobody stops.  Held here, it is raised again once `proc` exists,
    inside the try that stops memsup.  A Python handler, not a blocked mask:
    exec resets a handler, but memsup and the command would inherit a mask.
    Only the main thread gets signals, so only it holds them back.
    """

    def __init__(self, held: list[int]) -> None:
        self.held = held
        self.old: Any = None

    def __enter__(self) -> None:
        import threading
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGINT, lambda signum, _: self.held.append(signum))

    def __exit__(self, *_: object) -> None:
        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)


def measure_command(
    command: list[str],
    directory: Path,
    *,
    wall_s: float = 900.0,
    rss_mb: float = 8192.0,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run `command` under memsup with the original contract (see module doc).

    directory: the new evidence directory (must not exist; missing parents
    are created; relative to the caller's current directory).  wall_s and
    rss_mb: positive finite budgets, seconds and decimal MB.  cwd: where the
    command runs (None: the caller's current directory).  env: a string
    mapping merged over the default child environment.
    """
    # The original order of checks, so that the same bad call raises the same
    # exception.  Nothing below creates anything until memsup runs.
    argv = _check_command(command)
    wall_budget_s = _check_budget("wall_s", wall_s)
    rss_budget_mb = _check_budget("rss_mb", rss_mb)
    overrides = _check_env(env)
    where = _check_cwd(cwd)
    _check_platform()
    out = Path(directory)
    if os.path.lexists(out):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(out))
    memsup = find_memsup()

    # -o absolute: memsup resolves it against its own cwd, which is ours;
    # abspath only makes the record and messages unambiguous.
    # --output log: the original contract, the command's stdout and stderr in
    # stdout.log only (memsup's default, tee, would also pass them through),
    # all of it (--log-max unlimited: whatever memsup's default bound).
    call = [memsup, "-q", "-o", os.path.abspath(out), "--output", "log",
            "--log-max", "unlimited",
            "--wall-s", repr(wall_budget_s), "--rss-mb", repr(rss_budget_mb)]
    if where is not None:
        call += ["-C", str(where)]
    # memsup's -e overrides the inherited environment, the last value of a
    # key winning: defaults first, then the caller's env, as the original
    # merged them.
    for key, value in {**_CHILD_ENV_DEFAULTS, **overrides}.items():
        call += ["-e", f"{key}={value}"]
    call += ["--", *argv]

    held: list[int] = []
    with _interrupts_held(held):
        try:
            proc = subprocess.Popen(call, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as failure:
            raise RuntimeError(f"cannot run {memsup}: {failure}") from failure
    try:
        for signum in held:  # now that memsup can be told: as it came
            signal.raise_signal(signum)
        _, stderr = proc.communicate()
    except BaseException:
        # KeyboardInterrupt and the like: as the original's finally, nothing
        # the command started outlives the call.  memsup kills the tree and
        # writes its record on SIGTERM.
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        raise
    message = stderr.decode("utf-8", "replace")

    record_path = out / "resources.json"
    if proc.returncode == _MEMSUP_ERROR and not record_path.exists():
        raise _memsup_failed(message, out)
    try:
        record = json.loads(record_path.read_text(encoding="utf-8",
                                                  errors="surrogateescape"))
    except (OSError, ValueError) as failure:
        raise RuntimeError(f"memsup exited {proc.returncode} without a readable "
                           f"{record_path}: {failure}; {message.strip()}") from failure
    if record.get("reason") == "running":  # memsup did not finish the run
        if proc.returncode == _MEMSUP_ERROR:
            raise _memsup_failed(message, out)
        raise RuntimeError(f"memsup ended (status {proc.returncode}) before "
                           f"finishing {record_path}; {message.strip()}")
    if record.get("reason") == "start_failed":
        raise _start_failure(record, argv, where)
    return record


# ---------------------------------------------------------------------------
# read_oom: the record's "oom", the twin of supervisor/evidence/oomkills.c
# ---------------------------------------------------------------------------

# The contract's keys and what each may hold, nested as the record nests
# them: oomkills.c's table, key for key.  Absent is always allowed; null
# only for the kinds that say so.
_OOM_SITE = {"site": "str", "mb": "num"}
_OOM_VICTIM = {"pid": "int?", "gen": "int?", "comm": "str?", "exe": "str?", "argv": "strs?",
               "lineage": "ints", "rss_mb": "num?", "anon_rss_mb": "num?", "file_rss_mb": "num?",
               "shmem_rss_mb": "num?", "heap_mb": "num?", "top_sites": ("objs", _OOM_SITE)}
_OOM_LIMIT = {"by": "str", "cgroup": "str?", "limit_mb": "num?", "constraint": "str?"}
_OOM_PROCESS = {"pid": "int", "comm": "str?", "rss_mb": "num", "heap_mb": "num?",
                "victim": "bool"}
_OOM_TREE = {"at_s": "num", "cgroup_mb": "num?", "anon_mb": "num?", "page_cache_mb": "num?",
             "shmem_mb": "num?", "kernel_mb": "num?", "processes": ("objs", _OOM_PROCESS),
             "processes_total": "int"}
_OOM_FIELDS = {"at_s": "num", "woken_by": "str", "after_event_ms": "num?",
               "kernel_at_s": "num?", "source": "str", "evidence": "str",
               "victim": ("obj", _OOM_VICTIM), "limit": ("obj", _OOM_LIMIT),
               "tree": ("obj?", _OOM_TREE)}  # null: no sample came before the kill
# What a message says a key is not (oomkills.c's kind_words).
_OOM_WORDS = {"num": "a number", "num?": "a number or null", "int": "an integer",
              "int?": "an integer or null", "str": "a string", "str?": "a string or null",
              "ints": "an array of integers", "strs?": "an array of strings or null",
              "bool": "true or false", "obj": "an object", "obj?": "an object or null",
              "objs": "an array of objects"}


def _oom_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _oom_int(v: Any) -> bool:
    """A whole number a double holds exactly, as oomkills.c takes one."""
    return (_oom_num(v) and abs(v) <= 2**53
            and (isinstance(v, int) or float(v).is_integer()))


def _oom_holds(v: Any, kind: str) -> bool:
    if kind.endswith("?") and v is None:
        return True
    base = kind.rstrip("?")
    if base == "num":
        return _oom_num(v)
    if base == "int":
        return _oom_int(v)
    if base == "str":
        return isinstance(v, str)
    if base == "bool":
        return isinstance(v, bool)
    if base == "obj":
        return isinstance(v, dict)
    if not isinstance(v, list):
        return False
    if base == "ints":
        return all(_oom_int(x) for x in v)
    if base == "strs":
        return all(isinstance(x, str) for x in v)
    return True  # objs: each item is checked by the caller, by its index


def _oom_check(obj: dict, fields: dict, path: str) -> None:
    for key, kind in fields.items():
        if key not in obj:
            continue
        v = obj[key]
        kind, sub = (kind, None) if isinstance(kind, str) else kind
        if not _oom_holds(v, kind):
            raise ValueError(f"resources.json: {path}.{key}: not {_OOM_WORDS[kind]}")
        if kind == "objs":
            for i, item in enumerate(v):
                if not isinstance(item, dict):
                    raise ValueError(f"resources.json: {path}.{key}[{i}]: not an object")
                _oom_check(item, sub, f"{path}.{key}[{i}]")
        elif sub is not None and v is not None:
            _oom_check(v, sub, f"{path}.{key}")


@dataclass(frozen=True)
class OomKills:
    """The OOM kills of a record (read_oom)."""
    count: int | None  # processes the kernel's OOM killer took; None: unknown
    kills: list  # the listed ones, as the record has them


def read_oom(record: Mapping[str, Any]) -> OomKills:
    """The record's OOM kills, checked (see the module doc)."""
    kc, ul = record.get("oom_kills"), record.get("oom_unlisted")
    count = int(kc) if _oom_int(kc) and kc >= 0 else None
    unlisted = int(ul) if _oom_int(ul) and ul >= 0 else 0
    if "oom" not in record or record["oom"] is None:
        # null: memsup had no way to see a kill, so a count of 0 is not
        # believed, one the kernel counted all the same is; absent: a
        # memsup before the list, whose count is all there is
        if "oom" in record and not count:
            count = None
        return OomKills(count, [])
    kills = record["oom"]
    if not isinstance(kills, list):
        raise ValueError('resources.json: "oom": not an array or null')
    for i, kill in enumerate(kills):
        if not isinstance(kill, dict):
            raise ValueError(f'resources.json: "oom"[{i}]: not an object')
        _oom_check(kill, _OOM_FIELDS, f'"oom"[{i}]')
    return OomKills(max(count or 0, len(kills) + unlisted), list(kills))


# ---------------------------------------------------------------------------
# The shim, when it is loaded in this process
# ---------------------------------------------------------------------------

_UNKNOWN = object()
_shim_functions: Any = _UNKNOWN


def _shim():
    """(memtrace_read_stats, memtrace_mark, Stats) from the loaded shim, or None."""
    global _shim_functions
    if _shim_functions is not _UNKNOWN:
        return _shim_functions
    _shim_functions = None
    try:
        import ctypes

        # preload/memtrace.h, struct memtrace_stats: fields are only ever
        # appended, and the call copies min(size, its size), so this prefix
        # stays valid against newer shims.
        class Stats(ctypes.Structure):
            _fields_ = [(name, ctypes.c_uint64) for name in (
                "heap_current", "heap_peak",
                "map_anon_current", "map_anon_peak",
                "map_file_current", "map_file_peak",
                "total_current", "total_peak",
                "calls_malloc_family", "calls_free")]

        everything = ctypes.CDLL(None)  # dlopen(NULL): the global scope
        read_stats = everything.memtrace_read_stats
        read_stats.argtypes = [ctypes.POINTER(Stats), ctypes.c_size_t]
        read_stats.restype = ctypes.c_int
        mark_fn = everything.memtrace_mark
        mark_fn.argtypes = [ctypes.c_char_p]
        mark_fn.restype = ctypes.c_int
        _shim_functions = (read_stats, mark_fn, Stats)
    except (ImportError, OSError, AttributeError):
        pass
    return _shim_functions


def _shim_stats():
    shim = _shim()
    if shim is None:
        return None
    read_stats, _, stats_type = shim
    import ctypes

    stats = stats_type()
    if read_stats(ctypes.byref(stats), ctypes.sizeof(stats)) != 0:
        return None
    return stats


# ---------------------------------------------------------------------------
# mark
# ---------------------------------------------------------------------------

def _mark_line(label: str) -> bytes:
    clean = label.replace("\t", " ").replace("\n", " ")
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # time.monotonic_ns() is CLOCK_MONOTONIC on Linux, the clock memsup
    # keeps: with it memsup places the marker exactly, not when it woke.
    text = (f"{clean}\tpid={os.getpid()}\tmaxrss_kb={own}"
            f"\tmaxrss_children_kb={children}\tmono_ns={time.monotonic_ns()}\n")
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate outside the escape range
        return text.encode("utf-8", "replace")


def _mark_file(path: str, line: bytes) -> bool:
    try:
        # No O_CREAT: memsup made the file; a stale MEMSUP_MARK after the run
        # must not litter the file system.  O_APPEND and one write(2): lines
        # from several processes never interleave.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.write(fd, line) == len(line)
    except OSError:
        return False
    finally:
        try:
            os.close(fd)
        except OSError:
            pass


def mark(label: str) -> bool:
    """Record a phase marker (see the module doc).  True if it went somewhere."""
    if not isinstance(label, str):
        raise TypeError(f"label must be a str, not {type(label).__name__}")
    path = os.environ.get("MEMSUP_MARK")
    if path and _mark_file(path, _mark_line(label)):
        return True
    shim = _shim()
    if shim is None:
        return False
    _, mark_fn, _ = shim
    encoded = label.encode("utf-8", "replace")
    if b"\0" in encoded:  # C would stop at the NUL anyway
        encoded = encoded.split(b"\0", 1)[0]
    try:
        return mark_fn(encoded) == 0
    except Exception:  # a marker must not break the program
        return False


# ---------------------------------------------------------------------------
# take_snapshot
# ---------------------------------------------------------------------------

@dataclass
class MemorySnapshot:
    """The original tool's layered memory snapshot, plus VmHWM and heap source.

    Sizes in MiB (kB / 1024, bytes / 2**20), as the original tool's.
    elapsed_s is left to the caller, as in the original tool.
    """
    label: str
    rss_mb: float  # /proc/self/status VmRSS
    vm_peak_mb: float  # /proc/self/status VmPeak
    maxrss_mb: float  # getrusage(RUSAGE_SELF) ru_maxrss
    maxrss_children_mb: float  # getrusage(RUSAGE_CHILDREN) ru_maxrss
    tracemalloc_peak_mb: float  # heap peak: shim or tracemalloc (heap_source)
    tracemalloc_current_mb: float  # heap now: shim or tracemalloc
    elapsed_s: float = 0.0
    vm_hwm_mb: float = 0.0  # /proc/self/status VmHWM
    heap_source: str = "tracemalloc"  # "shim" or "tracemalloc"


def _read_status_kb(keys: tuple[str, ...]) -> dict[str, float]:
    found = dict.fromkeys(keys, 0.0)
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                key, _, rest = line.partition(":")
                if key in found:
                    found[key] = float(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return found


def take_snapshot(label: str) -> MemorySnapshot:
    """The layered memory snapshot of this process (see the module doc)."""
    status = _read_status_kb(("VmRSS", "VmPeak", "VmHWM"))
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    stats = _shim_stats()
    if stats is not None:
        current, peak, source = stats.heap_current, stats.heap_peak, "shim"
    else:
        current, peak = tracemalloc.get_traced_memory()
        source = "tracemalloc"
    mib = 1024.0 * 1024.0
    return MemorySnapshot(
        label=label,
        rss_mb=status["VmRSS"] / 1024.0,
        vm_peak_mb=status["VmPeak"] / 1024.0,
        maxrss_mb=own / 1024.0,
        maxrss_children_mb=children / 1024.0,
        tracemalloc_peak_mb=peak / mib,
        tracemalloc_current_mb=current / mib,
        vm_hwm_mb=status["VmHWM"] / 1024.0,
        heap_source=source,
    )


# ---- the records of an evidence directory ------------------------------------

# -- layout: generated by scripts/pylayout.c from common/record.h,
# common/stacks.h, common/names.c, supervisor/collect/fold.h and
# stackfold.h; tests/pylayout.sh keeps this copy equal to it --
_RECORD_MAGIC = 0x3130304345524D54
_RECORD_VERSION = 1
_RECORD_SIZE = 8192
_RECORD_SUFFIX = ".mtr"
_RECORD_OFFSETS = {
    "magic": 0,
    "version": 8,
    "record_size": 12,
    "pid": 16,
    "gen": 24,
    "relation": 28,
    "parent_pid": 32,
    "state": 864,
}
_STATES = ("running", "exited", "_exit", "execed", "signaled")
_RELATIONS = ("root", "fork", "vfork", "exec", "spawn", "system", "popen",
    "unknown")
_CALLS = ("malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign", "aligned_alloc",
    "memalign", "valloc", "pvalloc", "mmap", "munmap", "mremap")
_STACKS_MAGIC = 0x3130304B5453544D
_STACKS_VERSION = 1
_STACKS_SUFFIX = ".mts"
_STACKS_OFFSETS = {
    "magic": 0,
    "version": 8,
    "header_bytes": 12,
    "module_bytes": 16,
    "module_slots": 20,
    "stack_bytes": 24,
    "stack_slots": 28,
    "max_frames": 32,
    "pid": 40,
    "gen": 44,
    "module_count": 64,
    "stack_count": 68,
    "code_bytes": 248,
    "code_slots": 252,
    "code_count": 256,
    "py_state": 260,
    "py_version": 264,
    "py_samples": 272,
    "py_frames": 280,
    "py_truncated": 288,
}
# a stack entry (struct mt_stack) and a code entry (struct mt_stacks_code)
_STACK_OFFSETS = {
    "nframes": 0,
    "flags": 4,
    "live_bytes": 16,
    "live_count": 24,
    "peak_bytes": 40,
    "peak_count": 48,
    "total_bytes": 64,
    "total_count": 72,
    "pc": 80,
}
_STACK_PYTHON = 0x100
_MODULE_OFFSETS = {
    "start": 0,
    "end": 8,
    "file_offset": 16,
    "path": 80,
}
_MODULE_PATH_BYTES = 432
_CODE_OFFSETS = {
    "addr": 0,
    "firstlineno": 8,
    "flags": 12,
    "lines_len": 16,
    "lines_full": 20,
    "name": 32,
    "file": 192,
    "lines": 512,
}
_CODE_LAYOUT = {"code_bytes": 2048, "code_slots": 512}
_CODE_NAME_BYTES = 160
_CODE_FILE_BYTES = 320
_CODE_LINES_BYTES = 1536
_STACKS_CODES_OFFSET = 3280896
_PYFRAME_TAG_MASK = 0xF000000000000000
_PYFRAME_TAG = 0xA000000000000000
_PYFRAME_ENTRY = 0x800000000000000
_PYFRAME_CODE_SHIFT = 32
_PYFRAME_CODE_MASK = 0xFFFFF
_PYFRAME_INSTR_MASK = 0xFFFFFFFF
_PYFRAME_ELIDED_CODE = 0xFFFFE
_PYFRAME_ELIDED_MAX = 0xFFFFFF
_PYFRAME_ELIDED_ENTRIES_SHIFT = 24
_PY_WALKED = 1
_PY_UNKNOWN = 2
# the six layout values and max_frames a stacks file must carry
_STACKS_LAYOUT = {"header_bytes": 4096, "module_bytes": 512, "module_slots": 1024,
                  "stack_bytes": 336, "stack_slots": 8192, "max_frames": 32}
_STACKS_MODULES_OFFSET = 4096
_STACKS_STACKS_OFFSET = 528384
_FOLD_MAGIC = 0x3246544D
_FOLD_HEADER_BYTES = 16
_STACKFOLD_MAGIC = 0x3246534D
# -- end of layout --

_INT32_MAX = 2**31 - 1
_UINT32_MAX = 2**32 - 1


def _image_name(name: str, suffix: str) -> tuple[int, int] | None:
    """(pid, gen) of an image's file named "<pid>.<gen><suffix>", by the
    rule of common/imagename.h (plain decimal, no leading zero, pid
    1..INT32_MAX, gen within uint32); None for any other name."""
    import re

    m = re.fullmatch(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)" + re.escape(suffix), name, re.ASCII)
    if not m:
        return None
    pid, gen = int(m[1]), int(m[2])
    return (pid, gen) if 0 < pid <= _INT32_MAX and gen <= _UINT32_MAX else None


def _record_identity(raw: bytes) -> tuple[int, int]:
    """(pid, gen) a record says it is of."""
    import struct

    return (struct.unpack_from("<i", raw, _RECORD_OFFSETS["pid"])[0],
            struct.unpack_from("<I", raw, _RECORD_OFFSETS["gen"])[0])


def _record_check(raw: bytes) -> str | None:
    """None when raw is a record that common/filecheck.c's
    filecheck_record_file() lets through, else its reason: "short",
    "long", "magic", "version", "layout" or "corrupt"."""
    import struct

    if len(raw) < _RECORD_SIZE:
        return "short"
    if len(raw) > _RECORD_SIZE:
        return "long"
    o = _RECORD_OFFSETS
    (magic,) = struct.unpack_from("<Q", raw, o["magic"])
    (version, size) = struct.unpack_from("<II", raw, o["version"])
    if magic != _RECORD_MAGIC:
        return "magic"
    if version != _RECORD_VERSION:
        return "version"
    if size != _RECORD_SIZE:
        return "layout"
    (pid,) = struct.unpack_from("<i", raw, o["pid"])
    (parent,) = struct.unpack_from("<i", raw, o["parent_pid"])
    (relation,) = struct.unpack_from("<I", raw, o["relation"])
    (state,) = struct.unpack_from("<I", raw, o["state"])
    if pid <= 0 or state >= len(_STATES) or relation >= len(_RELATIONS) or parent < 0:
        return "corrupt"
    return None


def _fold_decode(payload: bytes, limit: int = _RECORD_SIZE, version: int = 2) -> bytes | None:
    """The zero-run encoding of supervisor/collect/fold.c, back to bytes
    (None when broken or longer than limit).  Version 1 had no long runs
    (0xff: 128 zeros)."""
    out = bytearray()
    i = 0
    while i < len(payload):
        c = payload[i]
        i += 1
        if c < 0x80:
            if i + c + 1 > len(payload):
                return None
            out += payload[i:i + c + 1]
            i += c + 1
        elif c == 0xFF and version >= 2:
            if i + 2 > len(payload):
                return None
            out += bytes(payload[i] | payload[i + 1] << 8)
            i += 2
        else:
            out += bytes(c - 0x7F)
        if len(out) > limit:
            return None
    return bytes(out)


def _fold_entries(path: Path, magic: int, limit: int):
    """(pid, gen, decoded bytes) of each whole entry of a fold file (both
    records.fold and stacks.fold), up to the first torn or damaged one."""
    import struct
    import zlib

    data = path.read_bytes()
    off = 0
    while off + 16 <= len(data):
        got, n, pid, gen = struct.unpack_from("<IIiI", data, off)
        end = off + 16 + n + 4
        version = (got >> 24) - ord("0")
        if got & 0xFFFFFF != magic & 0xFFFFFF or version not in (1, 2) or end > len(data):
            return
        (crc,) = struct.unpack_from("<I", data, off + 16 + n)
        if zlib.crc32(data[off + 8:off + 16 + n]) != crc:
            return
        raw = _fold_decode(data[off + 16:off + 16 + n], limit, version)
        if raw is None:
            return
        yield pid, gen, raw
        off = end


def _stacks_counts(raw: bytes, pid: int = 0, gen: int = 0) -> tuple[int, int] | str:
    """(module_count, stack_count) of a stacks file's bytes, as
    common/filecheck.c's filecheck_stacks_header() checks and clamps them
    (to their slots and to the entries whole inside raw; pid.gen checked
    when pid > 0), else its reason: "short", "magic", "version", "layout"
    or "identity"."""
    import struct

    o = _STACKS_OFFSETS
    if len(raw) < _STACKS_LAYOUT["header_bytes"]:
        return "short"
    if struct.unpack_from("<Q", raw, o["magic"])[0] != _STACKS_MAGIC:
        return "magic"
    if struct.unpack_from("<I", raw, o["version"])[0] != _STACKS_VERSION:
        return "version"
    if any(struct.unpack_from("<I", raw, o[k])[0] != v for k, v in _STACKS_LAYOUT.items()):
        return "layout"
    if pid > 0 and struct.unpack_from("<iI", raw, o["pid"]) != (pid, gen):
        return "identity"
    mc, sc = struct.unpack_from("<II", raw, o["module_count"])
    mc = min(mc, _STACKS_LAYOUT["module_slots"],
             max(0, len(raw) - _STACKS_MODULES_OFFSET) // _STACKS_LAYOUT["module_bytes"])
    sc = min(sc, _STACKS_LAYOUT["stack_slots"],
             max(0, len(raw) - _STACKS_STACKS_OFFSET) // _STACKS_LAYOUT["stack_bytes"])
    return mc, sc


def _stacks_published(raw: bytes, pid: int = 0, gen: int = 0) -> bytes | None:
    """The published part of a stacks file laid out as common/stacks.h
    says: its header, its module_count modules, its stack_count stacks
    (counts checked and clamped as _stacks_counts says).  None when raw is
    not a stacks file (of image pid.gen, when pid > 0)."""
    counts = _stacks_counts(raw, pid, gen)
    if isinstance(counts, str):
        return None
    mc, sc = counts
    hb, mb, sb = (_STACKS_LAYOUT[k] for k in ("header_bytes", "module_bytes", "stack_bytes"))
    cc, cb = _codes_count(raw), _CODE_LAYOUT["code_bytes"]
    cc = min(cc, max(0, len(raw) - _STACKS_CODES_OFFSET) // cb)
    return (raw[:hb] + raw[_STACKS_MODULES_OFFSET:_STACKS_MODULES_OFFSET + mc * mb]
            + raw[_STACKS_STACKS_OFFSET:_STACKS_STACKS_OFFSET + sc * sb]
            + raw[_STACKS_CODES_OFFSET:_STACKS_CODES_OFFSET + cc * cb])


def _codes_count(header: bytes) -> int:
    """A stacks header's published code_count, 0 when its code table is
    not of this layout (common/stacks.h, mt_stacks_codes_ok: a reader
    then ignores it, as memsup does), clamped to its slots."""
    import struct

    o = _STACKS_OFFSETS
    if len(header) < o["code_count"] + 4:
        return 0
    cb, cs, cc = struct.unpack_from("<III", header, o["code_bytes"])
    if (cb, cs) != (_CODE_LAYOUT["code_bytes"], _CODE_LAYOUT["code_slots"]):
        return 0
    return min(cc, cs)


def read_stacks(directory: str | os.PathLike) -> dict[tuple[int, int], bytes]:
    """{(pid, gen): published part of its stacks file} of an evidence
    directory (see the module doc)."""
    import struct

    directory = Path(directory)
    stacks: dict[tuple[int, int], bytes] = {}
    fold = directory / "stacks.fold"
    if fold.exists():
        for pid, gen, part in _fold_entries(fold, _STACKFOLD_MAGIC, 64 << 20):
            if len(part) < _STACKS_OFFSETS["stack_count"] + 4 or \
                    struct.unpack_from("<Q", part, 0)[0] != _STACKS_MAGIC:
                break
            stacks[(pid, gen)] = part
    rdir = directory / "records"
    if rdir.is_dir():
        for f in rdir.iterdir():
            image = _image_name(f.name, _STACKS_SUFFIX)
            if image is None or f.is_symlink() or not f.is_file():
                continue
            part = _stacks_published(f.read_bytes(), *image)
            if part is not None:
                stacks[image] = part
    return stacks


def _python_line(table: bytes, firstlineno: int, instr: int) -> int | None:
    """The line of code unit `instr` by CPython 3.11's location table (kept
    by 3.12 and 3.13; supervisor/analyze/pyframes.c reads it the same
    way), None where the table has no line for it."""
    def varint(i: int) -> tuple[int, int]:
        v = shift = 0
        while True:
            if i >= len(table) or shift > 30:
                raise IndexError
            b = table[i]
            i += 1
            v |= (b & 63) << shift
            shift += 6
            if not b & 64:
                return v, i

    def svarint(i: int) -> tuple[int, int]:
        u, i = varint(i)
        return (-(u >> 1) if u & 1 else u >> 1), i

    cur, at, i = firstlineno, 0, 0
    try:
        while i < len(table):
            first = table[i]
            i += 1
            code, units = (first >> 3) & 15, (first & 7) + 1
            delta = 0
            if not first & 128:
                return None  # not the start of an entry: a damaged copy
            if code == 14:  # long form: line delta, end line, two columns
                delta, i = svarint(i)
                for _ in range(3):
                    _, i = varint(i)
            elif code == 13:  # no columns
                delta, i = svarint(i)
            elif code in (10, 11, 12):  # one line, two column bytes
                delta, i = code - 10, i + 2
            elif code != 15:  # short form, one column byte
                i += 1
            if i > len(table):
                return None
            cur += delta
            if instr < at + units:
                return None if code == 15 or cur < 0 else cur
            at += units
    except IndexError:
        pass
    return None


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def read_sites(directory: str | os.PathLike) -> dict[tuple[int, int], dict]:
    """{(pid, gen): image} of an evidence directory's stacks files (as
    read_stacks finds them), decoded: see the module doc."""
    import struct

    out: dict[tuple[int, int], dict] = {}
    ho, so, co, mo = _STACKS_OFFSETS, _STACK_OFFSETS, _CODE_OFFSETS, _MODULE_OFFSETS
    hb, mb, sb = (_STACKS_LAYOUT[k] for k in ("header_bytes", "module_bytes", "stack_bytes"))
    cb = _CODE_LAYOUT["code_bytes"]
    for image, part in read_stacks(directory).items():
        if isinstance(_stacks_counts(part[:hb]), str):
            continue  # the header checks; its counts against the part below
        mc, sc = struct.unpack_from("<II", part, ho["module_count"])
        mc = min(mc, _STACKS_LAYOUT["module_slots"], max(0, len(part) - hb) // mb)
        sc = min(sc, _STACKS_LAYOUT["stack_slots"])
        sc = min(sc, max(0, len(part) - hb - mc * mb) // sb)
        cc = min(_codes_count(part), max(0, len(part) - hb - mc * mb - sc * sb) // cb)
        state, = struct.unpack_from("<I", part, ho["py_state"])
        version, = struct.unpack_from("<Q", part, ho["py_version"])
        python = None
        if state in (_PY_WALKED, _PY_UNKNOWN):
            rel, serial = (version >> 4) & 15, version & 15
            text = "%d.%d.%d" % (version >> 24 & 255, version >> 16 & 255, version >> 8 & 255)
            if rel != 15:
                text += ("a" if rel < 11 else "b" if rel == 11 else "rc") + str(serial)
            python = {"version": text,
                      "frames": "python" if state == _PY_WALKED
                      else "native_only_unknown_version",
                      "python_samples": struct.unpack_from("<Q", part, ho["py_samples"])[0],
                      "python_frames": struct.unpack_from("<Q", part, ho["py_frames"])[0],
                      "truncated_samples":
                          struct.unpack_from("<Q", part, ho["py_truncated"])[0],
                      "code_objects": cc}
        modules = []
        for m in range(mc):
            at = hb + m * mb
            start, end, foff = struct.unpack_from("<QQQ", part, at + mo["start"])
            path = _cstr(part[at + mo["path"]:at + mo["path"] + _MODULE_PATH_BYTES])
            modules.append((start, end, foff, path))
        codes = []
        for c in range(cc):
            at = hb + mc * mb + sc * sb + c * cb
            first, _flags, llen = struct.unpack_from("<III", part, at + co["firstlineno"])
            codes.append((_cstr(part[at + co["name"]:at + co["name"] + _CODE_NAME_BYTES]),
                          _cstr(part[at + co["file"]:at + co["file"] + _CODE_FILE_BYTES]),
                          first,
                          part[at + co["lines"]:at + co["lines"] + min(llen, _CODE_LINES_BYTES)]))
        lines_known = version >> 16 in (0x030B, 0x030C, 0x030D)
        stacks = []
        for k in range(sc):
            at = hb + mc * mb + k * sb
            n, flags = struct.unpack_from("<II", part, at + so["nframes"])
            pcs = struct.unpack_from("<%dQ" % min(n, _STACKS_LAYOUT["max_frames"]), part,
                                     at + so["pc"])
            frames = []
            for pc in pcs:
                if pc & _PYFRAME_TAG_MASK == _PYFRAME_TAG:
                    ci = (pc >> _PYFRAME_CODE_SHIFT) & _PYFRAME_CODE_MASK
                    if ci == _PYFRAME_ELIDED_CODE:
                        k, m = pc & _PYFRAME_ELIDED_MAX, (pc >> _PYFRAME_ELIDED_ENTRIES_SHIFT) & 255
                        frames.append({"function": "<%d Python frames elided%s>" % (
                                           k, ", %d entered from C" % m if m else ""),
                                       "file": None, "line": None, "python": True,
                                       "entry": False, "elided": k, "elided_entries": m})
                        continue
                    f = {"function": "<unknown code>", "file": None, "line": None,
                         "python": True, "entry": bool(pc & _PYFRAME_ENTRY)}
                    if ci < len(codes):
                        name, file, first, table = codes[ci]
                        line = _python_line(table, first, pc & _PYFRAME_INSTR_MASK) \
                            if lines_known else None
                        f.update(function=name, file=file or None,
                                 line=line if file and line else None)
                    frames.append(f)
                    continue
                mod = next((m for m in modules if m[0] <= pc < m[1]), None)
                frames.append({"pc": pc, "module": mod[3] if mod else None,
                               "file_offset": pc - mod[0] + mod[2] if mod else None})
            stacks.append({
                "flags": flags, "python": bool(flags & _STACK_PYTHON), "frames": frames,
                **{key: struct.unpack_from("<Q", part, at + so[key])[0]
                   for key in ("live_bytes", "live_count", "peak_bytes", "peak_count",
                               "total_bytes", "total_count")}})
        out[image] = {"pid": image[0], "gen": image[1], "python": python, "stacks": stacks}
    return out


# What an image of processes.json holds where a key is left out: the same
# table as supervisor/evidence/processes.c's (image_defaults, record_defaults),
# and the same five keys another key says (_processes_fill).
_PROCESS_DEFAULTS: dict[str, Any] = {
    "gen": 0, "ppid": None,
    "lineage": {"relation": None, "parent_gen": 0, "guessed": False},
    "argv": [], "argv_truncated": False, "argc": None, "exe": None,
    "record_error": None, "untraced_why": None,
    "start_s": None, "end_s": None, "first_seen_s": None, "last_seen_s": None,
    "samples": 0, "polled_peak_rss": None, "polled_peak_at_s": None,
    "session": None, "escaped": False, "leftover_killed": False,
    "exit_code": None, "record": None, "at_peak": None,
}
_RECORD_DEFAULTS: dict[str, Any] = {
    "flags": 0, "exit_code": 0, "exit_signal": None,
    "start_real_ns": 0, "start_mono_ns": 0, "end_mono_ns": 0,
    "heap": {"current": 0, "peak": 0, "peak_mono_ns": 0, "requested_total": 0,
             "largest_request": 0, "at_fork": 0, "hist": []},
    "calls": {},
    "maps": {"anon_current": 0, "anon_peak": 0, "anon_at_fork": 0, "file_current": 0,
             "file_peak": 0, "largest": 0, "untracked_calls": 0, "untracked_bytes": 0},
    "total": {"current": 0, "peak": 0, "peak_mono_ns": 0},
    "kernel": {"vm_hwm_kb": 0, "vm_rss_kb": 0, "vm_peak_kb": 0,
               "ru_maxrss_self_kb": 0, "ru_maxrss_children_kb": 0},
    "marker_count": 0, "markers": [],
}


def _fill(obj: dict, defaults: dict) -> None:
    """Each key of defaults obj lacks, as a copy; inside an object both have,
    the same (jsonr_fill in C)."""
    for key, value in defaults.items():
        if key not in obj:
            obj[key] = json.loads(json.dumps(value))
        elif isinstance(value, dict) and isinstance(obj[key], dict):
            _fill(obj[key], value)


def _processes_fill(image: dict) -> dict:
    """An image of processes.json with every key (processes_fill in C)."""
    _fill(image, _PROCESS_DEFAULTS)
    rec = image["record"]
    if isinstance(rec, dict):
        _fill(rec, _RECORD_DEFAULTS)
    traced = isinstance(rec, dict)
    peak = image["polled_peak_rss"]
    hwm = rec["kernel"].get("vm_hwm_kb") if traced and isinstance(rec["kernel"], dict) else None
    state = rec.get("state") if traced else None
    if not isinstance(state, str):
        state = "running"  # as C reads a state it cannot read
    shim = (traced and isinstance(hwm, (int, float)) and not isinstance(hwm, bool) and hwm != 0
            and state != "running")
    if isinstance(image["lineage"], dict):
        image["lineage"].setdefault("parent_pid", image["ppid"])
    image.setdefault("traced", traced)
    image.setdefault("sampled", isinstance(peak, (int, float)) and not isinstance(peak, bool))
    image.setdefault("vm_hwm_kb", hwm if shim else None)
    image.setdefault("vm_hwm_from", "shim" if shim else None)
    return image


def read_processes(directory: str | os.PathLike) -> list[dict]:
    """processes.json of an evidence directory, every key there (see the module doc)."""
    with open(Path(directory) / "processes.json", encoding="utf-8",
              errors="surrogateescape") as f:
        images = json.load(f)
    if not isinstance(images, list) or not all(isinstance(p, dict) for p in images):
        raise ValueError("processes.json: not an array of objects")
    return [_processes_fill(p) for p in images]


def _number(v: Any) -> float | None:
    """v when JSON holds a number there (jsonr_num in C), else None."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# A record's reason as the state evidence/read.h names; any other reason,
# null or one a newer memsup writes, is a run that ended.
_RUN_STATES = {"running": "running", "supervisor_killed": "killed",
               "start_failed": "start_failed"}


def read_run(directory: str | os.PathLike) -> dict:
    """resources.json of an evidence directory as a run (see the module doc)."""
    with open(Path(directory) / "resources.json", encoding="utf-8",
              errors="surrogateescape") as f:
        record = json.load(f)
    if not isinstance(record, dict):
        raise ValueError("resources.json: not a JSON object")
    reason = record.get("reason") if isinstance(record.get("reason"), str) else None
    state = _RUN_STATES.get(reason, "ended")
    rss = _number(record.get("peak_tree_rss_mb"))
    answer = _number(record.get("peak_mb"))
    source = record.get("peak_source") if isinstance(record.get("peak_source"), str) else None
    if answer is None:  # a killed memsup, or one before the answer
        answer, source = rss, ("polled_rss" if rss is not None else None)
    if state == "start_failed":  # its summed RSS is a 0 of no sample
        answer, source = None, None
    broken = ""
    try:
        read_oom(record)
    except ValueError as forged:
        broken = str(forged)
    if state != "running" and not broken:
        if not isinstance(record.get("command"), list):
            broken = 'resources.json: no "command" array'
        elif _number(record.get("wall_s")) is None:
            broken = 'resources.json: no numeric "wall_s"'
        elif rss is None:
            broken = 'resources.json: no numeric "peak_tree_rss_mb"'
    return {"state": state, "reason": reason, "answer_mb": answer, "source": source,
            "broken": broken, "has_processes": state in ("ended", "start_failed"),
            "comparable": state == "ended" and not broken and answer is not None,
            "record": record}


def read_records(directory: str | os.PathLike) -> dict[tuple[int, int], bytes]:
    """{(pid, gen): record bytes} of an evidence directory (see the module doc)."""
    directory = Path(directory)
    records: dict[tuple[int, int], bytes] = {}
    fold = directory / "records.fold"
    if fold.exists():
        for pid, gen, rec in _fold_entries(fold, _FOLD_MAGIC, _RECORD_SIZE):
            rec = rec.ljust(_RECORD_SIZE, b"\0")
            if _record_check(rec) is None:
                records[(pid, gen)] = rec
    rdir = directory / "records"
    if rdir.is_dir():
        for f in rdir.iterdir():
            image = _image_name(f.name, _RECORD_SUFFIX)
            if image is None or f.is_symlink() or not f.is_file():
                continue  # as memsup and the shim: O_NOFOLLOW, regular files
            rec = f.read_bytes()
            if _record_check(rec) is None and _record_identity(rec) == image:
                records[image] = rec
    return records

