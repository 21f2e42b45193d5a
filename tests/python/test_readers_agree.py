#!/usr/bin/env python3
# test_readers_agree.py: the three readers of record files take the same
# files and refuse the same files for the same reason: the shim's (as it
# reads its tree's records for the stderr table), memsup's (as it reads
# finished evidence) and scripts/memsup.py's read_records.  One real record
# from a `true` run under the shim is copied into records/ of a scratch
# evidence directory whole, cut, lengthened, forged field by field and
# under names that are not quite an image's; each file's verdict is known
# in advance.  Output: TAP, one test point per file.
#
# Environment (AM_TESTS_ENVIRONMENT): MEMTRACE_SO, MT_SRCDIR, MT_BUILDDIR.
import os
import shutil
import struct
import subprocess
import sys
import tempfile
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
        print(f"1..{len(cases) + 1}")
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
        return failed
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
