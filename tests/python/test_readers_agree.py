#!/usr/bin/env python3
# test_readers_agree.py: the three readers of record files take the same
# files and refuse the same files for the same reason: the shim's (as it
# reads its tree's records for the stderr table), memsup's (as it reads
# finished evidence) and scripts/memsup.py's read_records.  One real record
# from a `true` run under the shim is copied into records/ of a scratch
# evidence directory whole, cut, lengthened, forged field by field and
# under names that are not quite an image's; each file's verdict is known
# in advance.
#
# Then the readers of resources.json and processes.json: memsup's
# (evidence/read.h, through tests/progs/run_verdicts), memsup.py's read_run
# and read_processes, memsup report and memsup diff each get the same
# evidence directories: a real run, a run whose command could not start,
# a run whose memsup was SIGKILLed (its sentinel closed the record), the
# same record as memsup left it before the sentinel ("running"), one of a
# memsup before the answer, and cut and forged copies.  The two readers
# must give the same state, answer, source, problem and processes; report
# must show that answer and state, and diff must compare exactly the runs
# the readers call comparable, with that answer.
#
# Output: TAP, one test point per record file and per directory.
#
# Environment (AM_TESTS_ENVIRONMENT): MEMSUP, MEMTRACE_SO, MT_PROGS,
# MT_SRCDIR, MT_BUILDDIR.
import json
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRCDIR = Path(os.environ["MT_SRCDIR"])
BUILDDIR = Path(os.environ["MT_BUILDDIR"])
sys.path.insert(0, str(SRCDIR / "scripts"))
import memsup  # noqa: E402

OFF = memsup._RECORD_OFFSETS


def real_record(scratch: Path) -> bytes:
    """The record of one `true` run under the shim."""
    out = scratch / "run"
    out.mkdir()
    env = dict(os.environ, LD_PRELOAD=os.environ["MEMTRACE_SO"], MEMTRACE_DIR=str(out),
               MEMTRACE_QUIET="1")
    subprocess.run(["true"], env=env, check=True)
    (rec,) = out.glob("*.mtr")
    return rec.read_bytes()


def patched(raw: bytes, field: str, fmt: str, value) -> bytes:
    b = bytearray(raw)
    struct.pack_into(fmt, b, OFF[field], value)
    return bytes(b)


def as_image(raw: bytes, pid: int, gen: int = 0) -> bytes:
    return patched(patched(raw, "pid", "<i", pid), "gen", "<I", gen)


def files(raw: bytes):
    """(name, bytes or a maker, expected verdict) for each file."""
    real_pid, real_gen = memsup._record_identity(raw)
    # every byte past state and marker_count not NUL: markers' labels, exe
    # and argv unterminated, argv_bytes far past its field; clamped by all
    long_argv = bytearray(as_image(raw, 27))
    long_argv[OFF["state"] + 8:] = b"x" * (len(long_argv) - OFF["state"] - 8)
    struct.pack_into("<I", long_argv, OFF["state"], 1)  # exited
    struct.pack_into("<I", long_argv, OFF["state"] + 4, 0)  # no markers
    return [
        (f"{real_pid}.{real_gen}.mtr", raw, "ok"),
        ("12.0.mtr", as_image(raw, 12), "ok"),
        ("13.0.mtr", as_image(raw, 14), "identity"),
        ("13.1.mtr", as_image(raw, 13, 0), "identity"),
        ("14.0.mtr", as_image(raw, 14)[:4096], "short"),
        ("15.0.mtr", b"", "short"),
        ("16.0.mtr", as_image(raw, 16) + b"\0", "long"),
        ("17.0.mtr", patched(as_image(raw, 17), "magic", "<Q", 0), "magic"),
        ("18.0.mtr", patched(as_image(raw, 18), "version", "<I", 2), "version"),
        ("19.0.mtr", patched(as_image(raw, 19), "record_size", "<I", 4096), "layout"),
        ("20.0.mtr", as_image(raw, 0), "corrupt"),
        ("21.0.mtr", patched(as_image(raw, 21), "state", "<I", len(memsup._STATES)), "corrupt"),
        ("22.0.mtr", patched(as_image(raw, 22), "relation", "<I", len(memsup._RELATIONS)),
         "corrupt"),
        ("23.0.mtr", patched(as_image(raw, 23), "parent_pid", "<i", -1), "corrupt"),
        ("27.0.mtr", bytes(long_argv), "ok"),
        ("024.0.mtr", as_image(raw, 24), "name"),
        ("25.00.mtr", as_image(raw, 25), "name"),
        ("0.0.mtr", as_image(raw, 0), "name"),
        ("2147483648.0.mtr", raw, "name"),
        ("26.0.mtr.tmp", as_image(raw, 26), "name"),
        ("28.0.mtr", "directory", "corrupt"),
        ("29.0.mtr", "symlink to 12.0.mtr", "error"),
    ]


def python_verdict(path: Path) -> str:
    image = memsup._image_name(path.name, memsup._RECORD_SUFFIX)
    if image is None:
        return "name"
    if path.is_symlink():
        return "error"
    if not path.is_file():
        return "corrupt"
    raw = path.read_bytes()
    why = memsup._record_check(raw)
    if why:
        return why
    return "ok" if memsup._record_identity(raw) == image else "identity"


def c_verdicts(program: str, evdir: Path) -> dict:
    done = subprocess.run([str(BUILDDIR / "tests" / "progs" / program), str(evdir)],
                          capture_output=True, text=True, check=True)
    return dict(line.rsplit(" ", 1) for line in done.stdout.splitlines())


# ---- evidence directories ----

MEMSUP = os.environ.get("MEMSUP", str(BUILDDIR / "supervisor" / "memsup"))


def memsup_run(out: Path, *command: str) -> None:
    subprocess.run([MEMSUP, "-q", "--output", "log", "-o", str(out), "--", *command],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120)


def killed_run(out: Path) -> None:
    """memsup SIGKILLed mid-run; back when its sentinel has closed the record."""
    proc = subprocess.Popen([MEMSUP, "-q", "--output", "log", "-o", str(out), "--",
                             "sh", "-c", "sleep 30"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = out / "resources.json"
    for _ in range(200):
        if record.exists():
            break
        time.sleep(0.05)
    time.sleep(1.5)  # past a rewrite with samples in it
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for _ in range(300):
        try:
            if json.loads(record.read_text()).get("reason") == "supervisor_killed":
                return
        except ValueError:
            pass  # the sentinel's rename is atomic; a torn read is a race of this loop
        time.sleep(0.05)
    raise RuntimeError("the sentinel never closed the record")


def copy_with(src: Path, dst: Path, edit=None, drop=(), cut=None) -> Path:
    """src copied to dst; its record edited by edit(dict), files in drop
    removed, and (name, bytes) in cut keeping only that many bytes."""
    shutil.copytree(src, dst, symlinks=True)
    if edit:
        rec = json.loads((dst / "resources.json").read_text(errors="surrogateescape"))
        rec = edit(rec)
        (dst / "resources.json").write_text(json.dumps(rec, indent=2))
    for name in drop:
        (dst / name).unlink()
    if cut:
        name, keep = cut
        raw = (dst / name).read_bytes()
        (dst / name).write_bytes(raw[:keep if keep >= 0 else len(raw) + keep])
    return dst


def popped(*keys):
    def edit(rec):
        for k in keys:
            rec.pop(k, None)
        return rec
    return edit


def setting(**values):
    def edit(rec):
        rec.update(values)
        return rec
    return edit


def directories(scratch: Path) -> list[tuple[str, Path]]:
    """(name, directory) for each directory the readers get."""
    real, failed, killed = scratch / "real", scratch / "start_failed", scratch / "killed"
    memsup_run(real, "sh", "-c", "true")
    memsup_run(failed, str(scratch / "no-such-program"))
    killed_run(killed)
    d = scratch / "dirs"
    d.mkdir()
    out = [("real", real), ("start_failed", failed), ("killed", killed)]
    out += [
        ("running", copy_with(killed, d / "running", setting(reason="running", exit_status=None,
                                                             error=None))),
        ("old", copy_with(real, d / "old", popped("peak_mb", "peak_source", "peak_at_s"))),
        ("killed_old", copy_with(killed, d / "killed_old", popped("peak_mb", "peak_source"))),
        ("cut_record", copy_with(real, d / "cut_record", cut=("resources.json", 200))),
        ("cut_processes", copy_with(real, d / "cut_processes", cut=("processes.json", -3))),
        ("no_processes", copy_with(real, d / "no_processes", drop=("processes.json",))),
        ("no_command", copy_with(real, d / "no_command", popped("command"))),
        ("no_wall", copy_with(real, d / "no_wall", setting(wall_s=None))),
        ("no_rss", copy_with(real, d / "no_rss", setting(peak_tree_rss_mb=None))),
        ("no_answer", copy_with(real, d / "no_answer", setting(peak_mb=None,
                                                               peak_tree_rss_mb=None))),
        ("forged_oom", copy_with(real, d / "forged_oom", setting(oom=7))),
        ("killed_forged_oom", copy_with(killed, d / "killed_forged_oom", setting(oom="x"))),
        ("running_no_command", copy_with(killed, d / "running_no_command",
                                         lambda r: popped("command")(setting(reason="running")(r)))),
        ("not_object", copy_with(real, d / "not_object", lambda r: [r])),
        ("unknown_reason", copy_with(real, d / "unknown_reason", setting(reason="a_new_one"))),
        ("killed_answer", copy_with(killed, d / "killed_answer", setting(peak_mb=12.5,
                                                                         peak_source="cgroup"))),
    ]
    return out


def c_runs(dirs: list[Path]) -> dict:
    done = subprocess.run([str(BUILDDIR / "tests" / "progs" / "run_verdicts"),
                           *map(str, dirs)], capture_output=True, text=True, check=True)
    out = {}
    for line in done.stdout.splitlines():
        f = line.split("\t")
        if f[1] == "error":
            out[f[0]] = "error"
            continue
        num = (lambda v: None if v in ("none", "error") else float(v))
        out[f[0]] = {"state": f[1], "answer_mb": num(f[2]),
                     "source": None if f[3] == "none" else f[3], "has_processes": f[4] == "1",
                     "comparable": f[5] == "1",
                     "images": f[6] if f[6] in ("none", "error") else int(f[6]),
                     "peak": num(f[7]) if f[6] not in ("none", "error") else f[6],
                     "broken": f[8]}
    return out


def py_run(d: Path):
    try:
        run = memsup.read_run(d)
    except (OSError, ValueError):
        return "error"
    out = {k: run[k] for k in ("state", "answer_mb", "source", "has_processes", "comparable",
                               "broken")}
    if not run["has_processes"]:
        out["images"] = out["peak"] = "none"
        return out
    try:
        images = memsup.read_processes(d)
    except (OSError, ValueError):
        out["images"] = out["peak"] = "error"
        return out
    peaks = []
    for p in images:
        hwm, polled = p.get("vm_hwm_kb"), p.get("polled_peak_rss")
        peaks.append(hwm * 1024 if memsup._number(hwm) is not None and hwm >= 0
                     else polled if memsup._number(polled) is not None else -1)
    out["images"], out["peak"] = len(images), (float(max(peaks)) if peaks else None)
    return out


def report_row(d: Path):
    done = subprocess.run([MEMSUP, "report", "--json", str(d)], capture_output=True, text=True)
    return done.returncode, json.loads(done.stdout)[0]


def diff_self(d: Path):
    done = subprocess.run([MEMSUP, "diff", "--json", str(d), str(d)], capture_output=True,
                          text=True)
    return done.returncode, (json.loads(done.stdout) if done.returncode == 0 else done.stderr)


def same_num(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def readers_agree(c, py) -> str:
    """"" when the C reader and memsup.py agree, else what differs."""
    if c == "error" or py == "error":
        return "" if c == py else f"C {c!r}, Python {py!r}"
    bad = [k for k in c if not (same_num(c[k], py[k]) if k in ("answer_mb", "peak")
                                and not isinstance(c[k], str) else c[k] == py[k])]
    return "" if not bad else "; ".join(f"{k}: C {c[k]!r}, Python {py[k]!r}" for k in bad)


def report_agrees(c, rc: int, row: dict) -> str:
    """"" when memsup report's row shows what the reader read."""
    if c == "error":
        return "" if row["status"].startswith("broken: ") else f"status {row['status']!r}"
    want = ("broken: " + c["broken"] if c["broken"]
            else "running" if c["state"] == "running"
            else "killed: " if c["state"] == "killed"
            else "start failed: " if c["state"] == "start_failed" else "ok")
    if c["images"] == "error" and not c["broken"]:
        want = "broken: processes.json"
    if not row["status"].startswith(want):
        return f"status {row['status']!r}, want {want!r}"
    if not same_num(row["peak_mb"], c["answer_mb"]) or row["peak_source"] != c["source"]:
        return f"peak {row['peak_mb']!r} {row['peak_source']!r}, want {c['answer_mb']!r} {c['source']!r}"
    fails = row["status"].startswith(("broken", "start failed", "killed"))
    return "" if rc == int(fails) else f"exit {rc}"


def diff_agrees(c, rc: int, out) -> str:
    """"" when memsup diff compares exactly the comparable runs, by their answer."""
    comparable = c != "error" and c["comparable"] and c["images"] != "error"
    if not comparable:
        return "" if rc == 125 else f"exit {rc}, want 125 (not comparable)"
    if rc != 0:
        return f"exit {rc}: {out}"
    peak = out["peak"]
    if not (same_num(peak["base_mb"], c["answer_mb"]) and same_num(peak["new_mb"], c["answer_mb"])):
        return f"peak {peak}, want {c['answer_mb']}"
    return ""


def check_directories(scratch: Path, first: int) -> tuple[int, list[str]]:
    dirs = directories(scratch)
    c = c_runs([p for _, p in dirs])
    lines, failed = [], 0
    for n, (name, d) in enumerate(dirs, first):
        cv = c.get(str(d), "missing")
        why = readers_agree(cv, py_run(d)) if cv != "missing" else "run_verdicts said nothing"
        if not why:
            why = report_agrees(cv, *report_row(d))
            why = why and "memsup report: " + why
        if not why:
            why = diff_agrees(cv, *diff_self(d))
            why = why and "memsup diff: " + why
        state = cv if isinstance(cv, str) else cv["state"] + (" (broken)" if cv["broken"] else "")
        if why:
            failed = 1
            lines.append(f"not ok {n} - {name}: {why}")
        else:
            lines.append(f"ok {n} - {name}: {state}, the same for both readers, report and diff")
    return failed, lines


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="mt-readers."))
    try:
        raw = real_record(scratch)
        evdir = scratch / "evidence"
        records = evdir / "records"
        records.mkdir(parents=True)
        cases = files(raw)
        for name, content, _ in cases:
            if content == "directory":
                (records / name).mkdir()
            elif isinstance(content, str):
                (records / name).symlink_to("12.0.mtr")
            else:
                (records / name).write_bytes(content)
        shim = c_verdicts("record_verdicts_shim", evdir)
        sup = c_verdicts("record_verdicts_memsup", evdir)
        taken = memsup.read_records(evdir)
        dir_failed, dir_lines = check_directories(scratch, len(cases) + 2)
        print(f"1..{len(cases) + 1 + len(dir_lines)}")
        failed = 0
        for n, (name, _, want) in enumerate(cases, 1):
            got = {"shim": shim.get(name), "memsup": sup.get(name),
                   "python": python_verdict(records / name)}
            if all(v == want for v in got.values()):
                print(f"ok {n} - {name}: {want} for all three readers")
            else:
                failed = 1
                print(f"not ok {n} - {name}: want {want}, got {got}")
        want_taken = {memsup._image_name(name, ".mtr") for name, _, v in cases if v == "ok"}
        if set(taken) == want_taken:
            print(f"ok {len(cases) + 1} - read_records takes exactly the valid records")
        else:
            failed = 1
            print(f"not ok {len(cases) + 1} - read_records took {sorted(taken)}, "
                  f"want {sorted(want_taken)}")
        print("\n".join(dir_lines))
        return failed | dir_failed
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
