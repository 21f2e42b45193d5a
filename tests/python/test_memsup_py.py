#!/usr/bin/env python3
# test_memsup_py.py: scripts/memsup.py against the contract of the original
# measure_command (seed_measure.py, not in this repository) and against
# ground truth (tests/progs workloads of known size, a 50 MB bytearray under
# the shim).  unittest, reported as TAP (one test point per test) for
# automake's tap-driver.sh.
#
# Environment (AM_TESTS_ENVIRONMENT): MEMSUP (the built memsup), MEMTRACE_SO
# (the built shim), MT_PROGS (tests/progs in the build tree), MT_SRCDIR.
import dataclasses
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
import unittest
from pathlib import Path

SRCDIR = Path(os.environ.get("MT_SRCDIR", Path(__file__).resolve().parents[2]))
SCRIPTS = SRCDIR / "scripts"
sys.path.insert(0, str(SCRIPTS))
import memsup  # noqa: E402

PROGS = Path(os.environ.get("MT_PROGS", "tests/progs"))
SHIM = os.environ.get("MEMTRACE_SO", "")
PROBE = object()  # "the sentinel-writing command" in TestContract.refused

# The keys of the record the original measure_command returned.
ORIGINAL_KEYS = {"command", "exit_code", "reason", "wall_s", "peak_tree_rss_mb", "poll_s",
             "rss_budget_mb", "wall_budget_s", "scope", "limitation"}


# The interrupt tests' callers take ^C as a program at a terminal does.  A
# suite started in the background (`make check &`, a CI runner) inherits
# SIGINT ignored, as POSIX has a shell do for an asynchronous list, and
# Python then leaves it ignored: no KeyboardInterrupt would ever come.
SIGINT_AS_AT_A_TERMINAL = ("import signal; "
                           "signal.signal(signal.SIGINT, signal.default_int_handler)\n")


def child_env(**extra):
    """The test's environment without the marker channel, plus extra."""
    env = {k: v for k, v in os.environ.items() if k not in ("MEMSUP_MARK", "LD_PRELOAD")}
    env.update(extra)
    return env


def run_python(code, **extra):
    """Run `code` in a fresh interpreter that can import memsup; its stdout."""
    done = subprocess.run([sys.executable, "-c", code, str(SCRIPTS)],
                          env=child_env(**extra), capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"python -c failed ({done.returncode}): {done.stderr}")
    return done.stdout


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Tmp(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="memsup-py."))
        # A command that leaves a trace if it ever starts.
        self.sentinel = self.tmp / "started"
        self.probe = ["/bin/sh", "-c", f"touch '{self.sentinel}'"]
        # The evidence directory and a parent that does not exist yet.
        self.parent = self.tmp / "new-parent"
        self.out = self.parent / "run"

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def assert_untouched(self):
        self.assertFalse(os.path.lexists(self.parent), "the directory's parent was created")
        self.assertFalse(self.sentinel.exists(), "the command was started")


class TestContract(Tmp):
    """Each bad call raises the original's exception before any side effect."""

    def refused(self, exc, command=PROBE, **kwargs):
        with self.assertRaises(exc) as caught:
            memsup.measure_command(self.probe if command is PROBE else command,
                                   self.out, **kwargs)
        self.assert_untouched()
        return caught.exception

    def test_command_not_a_list(self):
        for command in ("/bin/true", ("/bin/true",), None, {"/bin/true": 1}, b"/bin/true"):
            with self.subTest(command=command):
                self.refused(ValueError, command)

    def test_command_empty(self):
        err = self.refused(ValueError, [])
        self.assertIn("non-empty list", str(err))

    def test_command_items_not_str(self):
        for command in ([b"/bin/true"], ["/bin/true", 1], ["/bin/true", None],
                        [Path("/bin/true")], ["/bin/true", "a\0b"]):
            with self.subTest(command=command):
                self.refused(ValueError, command)

    def test_command_empty_executable(self):
        err = self.refused(ValueError, ["", "x"])
        self.assertIn("executable", str(err))

    def test_bad_budgets(self):
        bad = [True, False, math.nan, math.inf, -math.inf, -1, -0.5, 0, 0.0, -0.0,
               "10", "1e3", None, [10], 10 ** 400]
        for name in ("wall_s", "rss_mb"):
            for value in bad:
                with self.subTest(budget=name, value=value):
                    err = self.refused(ValueError, **{name: value})
                    self.assertIn(name, str(err))

    def test_good_budget_types_pass_validation(self):
        # int and float both pass (then the existing directory stops it).
        self.out.mkdir(parents=True)
        with self.assertRaises(FileExistsError):
            memsup.measure_command(self.probe, self.out, wall_s=5, rss_mb=1e-3)
        self.assertFalse(self.sentinel.exists())

    def test_bad_env(self):
        for env in (["A=1"], "A=1", [("A", "1")], 1,
                    {1: "x"}, {b"A": "x"}, {"": "x"}, {"A=B": "x"}, {"A\0": "x"},
                    {"A": 1}, {"A": None}, {"A": b"x"}, {"A": "x\0y"}):
            with self.subTest(env=env):
                self.refused(ValueError, env=env)

    def test_missing_cwd(self):
        err = self.refused(FileNotFoundError, cwd=self.tmp / "nowhere")
        self.assertIn("nowhere", str(err))

    def test_cwd_not_a_directory(self):
        plain = self.tmp / "plain"
        plain.write_text("")
        self.refused(NotADirectoryError, cwd=plain)

    def test_cwd_not_a_path(self):
        self.refused(TypeError, cwd=42)

    def test_directory_not_a_path(self):
        with self.assertRaises(TypeError):
            memsup.measure_command(self.probe, 42)
        self.assertFalse(self.sentinel.exists())

    def test_existing_directory(self):
        self.out.mkdir(parents=True)
        (self.out / "keep").write_text("mine")
        with self.assertRaises(FileExistsError):
            memsup.measure_command(self.probe, self.out)
        self.assertEqual(sorted(p.name for p in self.out.iterdir()), ["keep"])
        self.assertFalse(self.sentinel.exists())

    def test_existing_file_or_dangling_link(self):
        self.parent.mkdir()
        self.out.write_text("")
        with self.assertRaises(FileExistsError):
            memsup.measure_command(self.probe, self.out)
        link = self.parent / "link"
        link.symlink_to(self.tmp / "absent")
        with self.assertRaises(FileExistsError):
            memsup.measure_command(self.probe, link)
        self.assertFalse((self.tmp / "absent").exists())
        self.assertFalse(self.sentinel.exists())

    def test_original_order_of_checks(self):
        # The original checks command, wall_s, rss_mb, env, cwd, then the
        # directory: the first bad one decides the exception.
        self.out.mkdir(parents=True)
        with self.assertRaises(ValueError):
            memsup.measure_command([], self.out, cwd=self.tmp / "nowhere")
        with self.assertRaises(ValueError):
            memsup.measure_command(self.probe, self.out, env={"A=": "x"},
                                   cwd=self.tmp / "nowhere")
        with self.assertRaises(FileNotFoundError):
            memsup.measure_command(self.probe, self.out, cwd=self.tmp / "nowhere")
        self.assertFalse(self.sentinel.exists())

    def test_no_memsup_binary(self):
        old = os.environ.get("MEMSUP")
        os.environ["MEMSUP"] = str(self.tmp / "no-such-memsup")
        try:
            err = self.refused(RuntimeError)
        finally:
            if old is None:
                del os.environ["MEMSUP"]
            else:
                os.environ["MEMSUP"] = old
        self.assertIn("MEMSUP", str(err))

    def test_command_not_found(self):
        # The original's Popen raised FileNotFoundError after creating the
        # directory; memsup leaves a complete record besides.
        with self.assertRaises(FileNotFoundError) as caught:
            memsup.measure_command(["memsup-py-no-such-command"], self.out)
        err = caught.exception
        self.assertEqual(err.filename, "memsup-py-no-such-command")
        self.assertEqual(err.record["reason"], "start_failed")
        self.assertEqual(err.record["exit_status"], 127)
        self.assertIsNone(err.record["exit_code"])
        self.assertTrue((self.out / "resources.json").is_file())
        self.assertTrue((self.out / "stdout.log").is_file())

    def test_command_not_executable(self):
        plain = self.tmp / "not-executable"
        plain.write_text("#!/bin/sh\n")
        with self.assertRaises(PermissionError) as caught:
            memsup.measure_command([str(plain)], self.out)
        self.assertEqual(caught.exception.record["exit_status"], 126)

    def test_unwritable_parent_is_an_oserror(self):
        if os.geteuid() == 0:
            target = Path("/proc/memsup-py-cannot-create/run")  # EACCES/ENOENT even for root
        else:
            locked = self.tmp / "locked"
            locked.mkdir(mode=0o500)
            target = locked / "run"
        with self.assertRaises(OSError) as caught:
            memsup.measure_command(self.probe, target)
        self.assertIsNotNone(caught.exception.errno)
        self.assertFalse(os.path.lexists(target))
        self.assertFalse(self.sentinel.exists())


class TestRun(Tmp):
    """Runs of workloads with known sizes: the record's keys and figures."""

    def test_keys_units_and_peak(self):
        command = [str(PROGS / "steady"), "50", "300"]
        record = memsup.measure_command(command, self.out)
        self.assertTrue(ORIGINAL_KEYS <= set(record), ORIGINAL_KEYS - set(record))
        self.assertEqual(record, json.loads((self.out / "resources.json").read_text()))
        self.assertEqual(record["command"], command)
        self.assertEqual(record["exit_code"], 0)
        self.assertIsNone(record["reason"])
        self.assertEqual(record["poll_s"], 0.01)
        self.assertEqual(record["rss_budget_mb"], 8192.0)
        self.assertEqual(record["wall_budget_s"], 900.0)
        for key in ("scope", "limitation"):
            self.assertIsInstance(record[key], str)
        self.assertGreater(record["wall_s"], 0.3)
        # steady holds 50 MB rounded up to 2 MiB (50.33 MB) plus the program.
        self.assertGreaterEqual(record["peak_tree_rss_mb"], 50.3)
        self.assertLess(record["peak_tree_rss_mb"], 58.0)
        # Decimal MB: the peak is the largest rss.jsonl sample / 1e6.
        samples = [json.loads(line) for line in
                   (self.out / "rss.jsonl").read_text().splitlines()]
        self.assertTrue(samples)
        self.assertAlmostEqual(max(rss for _, rss in samples) / 1e6,
                               record["peak_tree_rss_mb"], places=6)
        self.assertIn("steady: holding 50 MB", (self.out / "stdout.log").read_text())
        # The original contract: the output in stdout.log only (--output log).
        self.assertEqual(record["output"]["mode"], "log")

    def test_output_reaches_only_the_log(self):
        # Run in a fresh interpreter whose own stdout is a pipe: nothing of
        # the command's may reach it, as with the original.
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import memsup\n"
                "r = memsup.measure_command(['sh', '-c', 'echo to-out; echo to-err >&2'], "
                "sys.argv[2])\n"
                "print('mode', r['output']['mode'])\n")
        done = subprocess.run([sys.executable, "-c", code, str(SCRIPTS), str(self.out)],
                              env=child_env(), capture_output=True, text=True,
                              timeout=120, check=True)
        self.assertEqual(done.stdout, "mode log\n")
        self.assertEqual(done.stderr, "")
        self.assertEqual((self.out / "stdout.log").read_text(), "to-out\nto-err\n")

    def test_the_whole_output_however_long(self):
        # The original kept every byte: past the bound memsup gives a log by
        # default (2 MiB with tee) too.
        record = memsup.measure_command(["head", "-c", "5000000", "/dev/zero"], self.out)
        self.assertEqual((self.out / "stdout.log").stat().st_size, 5000000)
        self.assertIsNone(record["output"]["log_max"])
        self.assertEqual(record["output"]["left_out"], 0)

    def test_read_records_of_ended_images(self):
        # Ended images' records are folded into records.fold; read_records
        # gives every traced image of processes.json its record, whole.
        import struct
        record = memsup.measure_command(
            ["/bin/sh", "-c", "for i in 1 2 3 4 5; do /bin/true; done; /bin/true"], self.out)
        self.assertEqual(record["exit_code"], 0)
        self.assertTrue((self.out / "records.fold").exists())
        recs = memsup.read_records(self.out)
        procs = memsup.read_processes(self.out)
        traced = {(p["pid"], p["gen"]) for p in procs if p["traced"]}
        self.assertGreaterEqual(len(traced), 2)
        self.assertLessEqual(traced, set(recs))
        for (pid, gen), rec in recs.items():
            self.assertEqual(len(rec), 8192)
            magic, version, size, rpid = struct.unpack_from("<QIIi", rec, 0)
            self.assertEqual((magic, version, size), (0x3130304345524D54, 1, 8192))
            self.assertEqual(rpid, pid)
        # every record is folded: records/ holds no record (staged runs not
        # even their names: test_records_staged_*)
        self.assertTrue(all(f.stat().st_size == 0 for f in (self.out / "records").iterdir()))

    def test_fold_versions_both_read(self):
        # records.fold entries of this build ("MTF2": 0xff then a u16 count
        # of zeros) and of earlier ones ("MTF1": 0xff is 128 zeros) decode
        # to the same bytes; an unknown version ends the reading.
        import struct
        import zlib
        raw = b"\x07" + bytes(300) + b"\x09" + bytes(128)

        def entry(magic, payload, pid):
            body = struct.pack("<iI", pid, 0) + payload
            return (struct.pack("<II", magic, len(payload)) + body
                    + struct.pack("<I", zlib.crc32(body)))
        v2 = b"\x00\x07\xff" + struct.pack("<H", 300) + b"\x00\x09\xff\x80\x00"
        v1 = b"\x00\x07\xff\xff\xab\x00\x09\xff"
        fold = self.tmp / "records.fold"
        fold.write_bytes(entry(0x3246544D, v2, 1) + entry(0x3146544D, v1, 2)
                         + entry(0x3946544D, v1, 3))
        got = list(memsup._fold_entries(fold, memsup._FOLD_MAGIC, 8192))
        self.assertEqual(got, [(1, 0, raw), (2, 0, raw)])

    def test_read_stacks_after_packing(self):
        # Once stacks.json is written the sparse stacks files leave
        # records/ for stacks.fold; read_stacks gives each image that
        # sampled (those stacks.json lists) its published part, whose
        # header names the image.
        import struct
        record = memsup.measure_command(
            [str(PROGS / 'site_shares'), '24', '2'],
            self.out)
        self.assertEqual(record["exit_code"], 0)
        images = json.loads((self.out / "stacks.json").read_text())["images"]
        self.assertGreaterEqual(len(images), 2)
        self.assertTrue((self.out / "stacks.fold").exists())
        self.assertEqual([f.name for f in (self.out / "records").iterdir()
                          if f.name.endswith(".mts")], [])
        stacks = memsup.read_stacks(self.out)
        self.assertEqual(set(stacks), {(i["pid"], i["gen"]) for i in images})
        for (pid, gen), part in stacks.items():
            magic, _v, hb, mb, _ms, sb = struct.unpack_from("<QIIIII", part, 0)
            hpid, hgen = struct.unpack_from("<iI", part, 40)
            mc, sc, samples = struct.unpack_from("<IIQ", part, 64)
            self.assertEqual((magic, hpid, hgen), (0x3130304B5453544D, pid, gen))
            # then the code table's entries (none: site_shares is no Python)
            cb, _cs, cc = struct.unpack_from("<III", part, memsup._STACKS_OFFSETS["code_bytes"])
            self.assertEqual(len(part), hb + mc * mb + sc * sb + cc * cb)
            self.assertEqual(cc, 0)
            self.assertGreater(samples, 0)
        # the evidence is small: the published parts, zero runs encoded
        self.assertLess((self.out / "stacks.fold").stat().st_size,
                        sum(len(p) for p in stacks.values()))

    def test_children_memsup_inherits_are_not_the_run(self):
        # `cmd & exec memsup ...`: the shell's child becomes memsup's.  It
        # is no member of the run (never killed, not in processes.json, in
        # the cgroup or by the /proc scan), memsup does not wait for it at
        # the end, and the record says it was there.
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_CHILD_SUBREAPER = 36
        # the orphaned sleep comes back to this process, to be reaped here
        self.assertEqual(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0)
        try:
            for mode in ("auto", "off"):
                out = self.tmp / f"ev-{mode}"
                pidfile = self.tmp / f"pid-{mode}"
                script = (f"sleep 60 & echo $! > '{pidfile}'; "
                          f"exec \"$MEMSUP\" -q --cgroup {mode} -o '{out}' -- /bin/true")
                subprocess.run(["/bin/sh", "-c", script], env=child_env(), timeout=60,
                               check=True)
                pid = int(pidfile.read_text())
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        state = f.read().rsplit(")", 1)[1].split()[0]
                    self.assertEqual(state, "S", f"{mode}: the shell's sleep was killed")
                    rec = json.loads((out / "resources.json").read_text())
                    notes = " | ".join(rec["notes"])
                    self.assertIn("memsup started with 1 child process of its own", notes)
                    self.assertNotIn("still not reaped", notes)
                    procs = memsup.read_processes(out)
                    self.assertNotIn(pid, [p["pid"] for p in procs], mode)
                finally:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
        finally:
            libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

    def test_records_survive_a_sigkilled_memsup(self):
        # memsup SIGKILLed while images end, some already folded: every
        # image that ran to its end still has a readable record, in the
        # fold or in its file (the fold appends before it empties a file).
        true = os.path.realpath(shutil.which("true")).encode() + b"\0"
        done = self.tmp / "done"
        staged = self.tmp / "staged"
        script = (f"echo \"$MEMTRACE_DIR\" > '{staged}'; "
                  f"i=0; while [ $i -lt 3000 ]; do /bin/true; echo $i >> '{done}'; "
                  "i=$((i+1)); done")
        sup = subprocess.Popen([os.environ["MEMSUP"], "-q", "--output", "log",
                                "-o", str(self.out), "--", "/bin/sh", "-c", script],
                               env=child_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        try:
            fold = self.out / "records.fold"
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if fold.exists() and fold.stat().st_size > 0 and done.exists() \
                        and len(done.read_text().splitlines()) >= 100:
                    break
                time.sleep(0.05)
            sup.kill()
        finally:
            sup.wait()
        # the command goes on, or is ended by what memsup left behind:
        # wait until it has stopped either way
        last, still = -1, 0
        while still < 10:
            now = len(done.read_text().splitlines())
            still = still + 1 if now == last else 0
            last = now
            time.sleep(0.1)
        recs = memsup.read_records(self.out)
        trues = sum(1 for rec in recs.values() if true in rec)
        print(f"# last={last} trues={trues} recs={len(recs)}", file=sys.stderr)
        self.assertGreaterEqual(last, 100)
        self.assertGreaterEqual(trues, last)
        self.assertLessEqual(trues, last + 1)
        # the sentinel moved what was staged (staging.h) and removed it
        stage = staged.read_text().strip()
        if stage != str(self.out / "records"):
            self.assertFalse(os.path.exists(stage), stage)

    def shim_dir(self, **env):
        """memsup runs a command that says its MEMTRACE_DIR: that."""
        done = subprocess.run([os.environ["MEMSUP"], "-q", "--output", "log",
                               "-o", str(self.out), "--", "/bin/sh", "-c",
                               'echo "$MEMTRACE_DIR"; /bin/true; /bin/true'],
                              env=child_env(**env), capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        return (self.out / "stdout.log").read_text().strip()

    def assert_every_record_read(self):
        recs = memsup.read_records(self.out)
        procs = memsup.read_processes(self.out)
        traced = {(p["pid"], p["gen"]) for p in procs if p["traced"]}
        self.assertGreaterEqual(len(traced), 3)
        self.assertEqual(traced, set(recs))

    def test_records_staged_then_drained(self):
        # The shim writes into a staging directory under the root given,
        # which is gone after the run; the evidence has every record
        # (folded) and records/ is empty: no name of a folded image.
        root = self.tmp / "stage-root"
        root.mkdir()
        stage = self.shim_dir(MEMSUP_STAGING_DIR=str(root))
        self.assertTrue(stage.startswith(f"{root}/memsup-"), stage)
        self.assertEqual(list(root.iterdir()), [])
        self.assertEqual(list((self.out / "records").iterdir()), [])
        self.assert_every_record_read()

    def test_records_staged_by_default_only_where_it_wins(self):
        # By default /dev/shm when it is a tmpfs and the evidence is not on
        # one; MEMSUP_STAGING_DIR=off writes into the evidence's records/,
        # where only the (emptied) names of folded images stay.
        def tmpfs(path):
            return subprocess.run(
                ["stat", "-f", "-c", "%T", path], capture_output=True,
                text=True).stdout.strip() == "tmpfs"
        stage = self.shim_dir()
        if tmpfs("/dev/shm") and not tmpfs(str(self.tmp)):
            self.assertTrue(stage.startswith("/dev/shm/memsup-"), stage)
            self.assertFalse(os.path.exists(stage))
        else:
            self.assertEqual(stage, str(self.out / "records"))
        self.assert_every_record_read()
        shutil.rmtree(self.out)
        stage = self.shim_dir(MEMSUP_STAGING_DIR="off")
        self.assertEqual(stage, str(self.out / "records"))
        names = list((self.out / "records").iterdir())
        self.assertGreaterEqual(len(names), 3)
        self.assertTrue(all(f.stat().st_size == 0 for f in names))
        self.assert_every_record_read()

    def test_env_defaults_overrides_and_cwd(self):
        os.environ["MT_PY_INHERITED"] = "inherited"
        try:
            record = memsup.measure_command(
                ["/bin/sh", "-c",
                 'echo "$OMP_NUM_THREADS $OPENBLAS_NUM_THREADS $MKL_NUM_THREADS '
                 '$NUMEXPR_NUM_THREADS $JAX_PLATFORMS $MT_PY_INHERITED $MT_PY_OVER"; pwd'],
                self.out, cwd=self.tmp, env={"OMP_NUM_THREADS": "4", "MT_PY_OVER": "yes"})
        finally:
            del os.environ["MT_PY_INHERITED"]
        self.assertEqual(record["exit_code"], 0)
        lines = (self.out / "stdout.log").read_text().splitlines()
        self.assertEqual(lines[0], "4 1 1 1 cpu inherited yes")
        self.assertEqual(Path(lines[1]).resolve(), self.tmp.resolve())

    def test_relative_directory_and_exit_status(self):
        here = os.getcwd()
        os.chdir(self.tmp)
        try:
            record = memsup.measure_command(["/bin/sh", "-c", "exit 3"], "rel/run")
        finally:
            os.chdir(here)
        self.assertEqual(record["exit_code"], 3)
        self.assertIsNone(record["reason"])
        self.assertTrue((self.tmp / "rel" / "run" / "resources.json").is_file())

    def test_signal_is_negative_exit_code(self):
        record = memsup.measure_command([str(PROGS / "spike"), "4", "10", "15"], self.out)
        self.assertEqual(record["exit_code"], -signal.SIGTERM)
        self.assertIsNone(record["reason"])

    def test_rss_budget_kill(self):
        record = memsup.measure_command([str(PROGS / "grower"), "8", "20", "400"],
                                        self.out, rss_mb=40)
        self.assertEqual(record["reason"], "rss_budget_exceeded")
        self.assertEqual(record["exit_code"], -signal.SIGKILL)
        self.assertEqual(record["exit_status"], 123)
        self.assertEqual(record["rss_budget_mb"], 40.0)
        self.assertGreaterEqual(record["peak_tree_rss_mb"], 40.0)

    def test_wall_budget_kill_leaves_no_process(self):
        pidfile = self.tmp / "pids"
        record = memsup.measure_command([str(PROGS / "sleeper"), "60", "2", str(pidfile)],
                                        self.out, wall_s=1.5)
        self.assertEqual(record["reason"], "wall_budget_exceeded")
        self.assertEqual(record["exit_code"], -signal.SIGKILL)
        self.assertEqual(record["exit_status"], 124)
        self.assertEqual(record["wall_budget_s"], 1.5)
        self.assertGreaterEqual(record["wall_s"], 1.5)  # never killed early
        pids = [int(p) for p in pidfile.read_text().split()]
        self.assertEqual(len(pids), 3)
        self.assertEqual([p for p in pids if pid_alive(p)], [])

    def test_interrupt_kills_the_tree(self):
        # KeyboardInterrupt in the caller: nothing the command started is
        # left, and the record says so (the original's finally: killpg).
        pidfile = self.tmp / "pids"
        code = (f"{SIGINT_AS_AT_A_TERMINAL}"
                f"import sys; sys.path.insert(0, sys.argv[1]); import memsup\n"
                f"memsup.measure_command([{str(PROGS / 'sleeper')!r}, '60', '2', "
                f"{str(pidfile)!r}], {str(self.out)!r})\n")
        caller = subprocess.Popen([sys.executable, "-c", code, str(SCRIPTS)],
                                  env=child_env(), stderr=subprocess.PIPE)
        for _ in range(3000):
            if pidfile.exists() or caller.poll() is not None:
                break
            time.sleep(0.01)
        self.assertTrue(pidfile.exists(), "sleeper never started")
        caller.send_signal(signal.SIGINT)
        _, stderr = caller.communicate(timeout=60)
        self.assertNotEqual(caller.returncode, 0)
        self.assertIn(b"KeyboardInterrupt", stderr)
        pids = [int(p) for p in pidfile.read_text().split()]
        self.assertEqual([p for p in pids if pid_alive(p)], [])
        record = json.loads((self.out / "resources.json").read_text())
        self.assertEqual(record["reason"], "interrupted")

    def test_interrupt_while_memsup_starts(self):
        # ^C that lands while Popen is still returning, after memsup began
        # the run (a loaded machine lets the command start first): held
        # back, then raised where memsup is stopped; the tree is not left
        # running.  Popen is wrapped to interrupt itself at that moment.
        pidfile = self.tmp / "pids"
        code = (f"{SIGINT_AS_AT_A_TERMINAL}"
                f"import os, signal, subprocess, sys, time\n"
                f"sys.path.insert(0, sys.argv[1]); import memsup\n"
                f"real = subprocess.Popen\n"
                f"def late(*a, **k):\n"
                f"    p = real(*a, **k)\n"
                f"    while not os.path.exists({str(pidfile)!r}): time.sleep(0.01)\n"
                f"    os.kill(os.getpid(), signal.SIGINT)\n"
                f"    time.sleep(0.2)\n"
                f"    return p\n"
                f"subprocess.Popen = late\n"
                f"memsup.measure_command([{str(PROGS / 'sleeper')!r}, '60', '2', "
                f"{str(pidfile)!r}], {str(self.out)!r})\n")
        caller = subprocess.Popen([sys.executable, "-c", code, str(SCRIPTS)],
                                  env=child_env(), stderr=subprocess.PIPE)
        try:
            _, stderr = caller.communicate(timeout=30)
        finally:
            caller.kill()
        self.assertIn(b"KeyboardInterrupt", stderr)
        pids = [int(p) for p in pidfile.read_text().split()]
        self.assertEqual([p for p in pids if pid_alive(p)], [])
        record = json.loads((self.out / "resources.json").read_text())
        self.assertEqual(record["reason"], "interrupted")

MARKING = """
import sys; sys.path.insert(0, sys.argv[1]); import memsup
first = memsup.mark("phase one")
held = bytearray(30_000_000)
for i in range(0, len(held), 4096):
    held[i] = 1
second = memsup.mark("two\\tthree\\nfour")
import time; time.sleep(0.6)  # held, whole, in the second phase (sampled even when loaded)
print(first, second)
"""


class TestMark(Tmp):
    def test_marks_through_memsup(self):
        record = memsup.measure_command([sys.executable, "-c", MARKING, str(SCRIPTS)],
                                        self.out)
        self.assertEqual(record["exit_code"], 0, (self.out / "stdout.log").read_text())
        self.assertEqual((self.out / "stdout.log").read_text().split(), ["True", "True"])
        lines = (self.out / "marks").read_text().splitlines()
        self.assertEqual(len(lines), 2, lines)
        fields = [line.split("\t") for line in lines]
        self.assertEqual([f[0] for f in fields], ["phase one", "two three four"])
        for f in fields:
            self.assertEqual(f[1], f"pid={record['pid']}")
            self.assertTrue(f[2].startswith("maxrss_kb=") and f[3].startswith("maxrss_children_kb="))
            self.assertTrue(f[4].startswith("mono_ns="), f)
        # the writer's CLOCK_MONOTONIC stamps, the second after the first
        mono = [int(f[4].split("=")[1]) for f in fields]
        self.assertLess(mono[0], mono[1])
        self.assertLess(mono[1], time.monotonic_ns())
        kb = [int(f[2].split("=")[1]) for f in fields]
        # The 30 MB bytearray was touched between the two markers.
        self.assertGreaterEqual(kb[1] - kb[0], 28_000)
        if "markers" in record:  # memsup read the channel into the record
            mine = [m for m in record["markers"] if m.get("source") == "file"]
            self.assertEqual([m["label"] for m in mine], ["phase one", "two three four"])
            self.assertEqual([m["pid"] for m in mine], [record["pid"]] * 2)
            self.assertEqual([m.get("snapshot", {}).get("maxrss_kb") for m in mine], kb)
            # placed at mono_ns: the gap between the two markers is the
            # writer's own, to the microsecond memsup keeps
            gap = (mine[1]["t"] - mine[0]["t"]) - (mono[1] - mono[0]) / 1e9
            self.assertLess(abs(gap), 2e-6, (mine, mono))
        if "phases" in record:  # the phase after "two three four" holds 30 MB more
            labels = [p["label"] for p in record["phases"]]
            at = labels.index("phase one")
            peaks = [p["peak_tree_rss_mb"] for p in record["phases"]]
            self.assertGreater(at, 0, labels)  # a phase before the first marker
            # (the touching runs in "phase one", but its last pages may be
            # sampled just after the second marker: the held block is whole
            # only in the second phase)
            self.assertGreaterEqual(peaks[at + 1] - peaks[at - 1], 28.0, record["phases"])

    @unittest.skipUnless(SHIM and os.path.exists(SHIM), "MEMTRACE_SO not built")
    def test_mark_through_the_shim(self):
        # No MEMSUP_MARK in the command's environment: memtrace_mark().
        record = memsup.measure_command(
            ["/usr/bin/env", "-u", "MEMSUP_MARK", sys.executable, "-c",
             "import sys; sys.path.insert(0, sys.argv[1]); import memsup\n"
             "print(memsup.mark('from the shim'))", str(SCRIPTS)], self.out)
        self.assertEqual((self.out / "stdout.log").read_text().split(), ["True"])
        if (self.out / "marks").exists():  # the file channel stayed unused
            self.assertEqual((self.out / "marks").read_text(), "")
        if not record.get("traced"):
            self.skipTest("memsup found no shim to inject")
        processes = memsup.read_processes(self.out)
        labels = [m["label"] for p in processes if p.get("record")
                  for m in p["record"].get("markers") or []]
        self.assertEqual(labels, ["from the shim"])

    def test_mark_without_channel(self):
        out = run_python("import sys; sys.path.insert(0, sys.argv[1]); import memsup\n"
                         "print(memsup.mark('nowhere'))")
        self.assertEqual(out.split(), ["False"])

    def test_mark_never_raises_on_io(self):
        missing = self.tmp / "gone" / "marks"
        for target in (missing, self.tmp):  # no such file; a directory
            with self.subTest(target=target):
                out = run_python("import sys; sys.path.insert(0, sys.argv[1]); import memsup\n"
                                 "print(memsup.mark('x'))", MEMSUP_MARK=str(target))
                self.assertEqual(out.split(), ["False"])
        self.assertFalse(missing.exists())
        self.assertFalse(missing.parent.exists())

    def test_mark_appends_in_process(self):
        marks = self.tmp / "marks"
        marks.write_text("earlier\n")
        os.environ["MEMSUP_MARK"] = str(marks)
        try:
            self.assertTrue(memsup.mark("a\tb"))
            self.assertTrue(memsup.mark("\udcff"))  # not UTF-8: still a line
        finally:
            del os.environ["MEMSUP_MARK"]
        lines = marks.read_bytes().split(b"\n")
        self.assertEqual(lines[0], b"earlier")
        self.assertTrue(lines[1].startswith(b"a b\tpid=%d\t" % os.getpid()))
        self.assertTrue(lines[2].startswith(b"\xff\tpid="))
        self.assertEqual(lines[3], b"")

    def test_mark_label_must_be_str(self):
        for label in (b"x", None, 1):
            with self.subTest(label=label):
                with self.assertRaises(TypeError):
                    memsup.mark(label)


SNAPSHOTS = """
import sys, json, dataclasses; sys.path.insert(0, sys.argv[1]); import memsup
before = memsup.take_snapshot("before")
held = bytearray(50_000_000)
during = memsup.take_snapshot("during")
del held
after = memsup.take_snapshot("after")
print(json.dumps([dataclasses.asdict(s) for s in (before, during, after)]))
"""


class TestSnapshot(Tmp):
    ORIGINAL_FIELDS = ["label", "rss_mb", "vm_peak_mb", "maxrss_mb", "maxrss_children_mb",
                   "tracemalloc_peak_mb", "tracemalloc_current_mb", "elapsed_s"]

    def test_fields_in_process_with_tracemalloc(self):
        names = [f.name for f in dataclasses.fields(memsup.MemorySnapshot)]
        self.assertEqual(names[:len(self.ORIGINAL_FIELDS)], self.ORIGINAL_FIELDS)
        self.assertIn("vm_hwm_mb", names)
        self.assertIn("heap_source", names)
        tracemalloc.start()
        try:
            held = bytes(5 * 1024 * 1024)
            snap = memsup.take_snapshot("in process")
            del held
        finally:
            tracemalloc.stop()
        self.assertEqual(snap.label, "in process")
        if snap.heap_source == "tracemalloc":  # the runner is not preloaded
            self.assertGreaterEqual(snap.tracemalloc_current_mb, 5.0)
        self.assertGreater(snap.rss_mb, 1.0)
        self.assertGreaterEqual(snap.vm_hwm_mb, snap.rss_mb)
        self.assertGreaterEqual(snap.vm_peak_mb, snap.rss_mb)
        self.assertGreaterEqual(snap.maxrss_mb, 1.0)
        self.assertEqual(snap.elapsed_s, 0.0)

    def snapshots(self, **extra):
        return json.loads(run_python(SNAPSHOTS, **extra))

    def test_without_shim(self):
        before, during, after = self.snapshots()
        for snap in (before, during, after):
            self.assertEqual(snap["heap_source"], "tracemalloc")
            self.assertEqual(snap["tracemalloc_peak_mb"], 0.0)  # not tracing
        # The bytearray (50e6 B = 47.7 MiB) is resident while held.
        self.assertGreaterEqual(during["rss_mb"] - before["rss_mb"], 45.0)
        self.assertGreaterEqual(during["vm_hwm_mb"], during["rss_mb"])

    @unittest.skipUnless(SHIM and os.path.exists(SHIM), "MEMTRACE_SO not built")
    def test_with_shim(self):
        records = self.tmp / "records"
        records.mkdir()
        before, during, after = self.snapshots(LD_PRELOAD=SHIM, MEMTRACE_DIR=str(records),
                                               MEMTRACE_QUIET="1")
        for snap in (before, during, after):
            self.assertEqual(snap["heap_source"], "shim")
        grew = during["tracemalloc_current_mb"] - before["tracemalloc_current_mb"]
        # 50e6 bytes are 47.68 MiB; malloc_usable_size adds under a page.
        self.assertGreaterEqual(grew, 47.6)
        self.assertLess(grew, 48.5)
        self.assertGreaterEqual(during["tracemalloc_peak_mb"], during["tracemalloc_current_mb"])
        self.assertLess(after["tracemalloc_current_mb"], during["tracemalloc_current_mb"] - 47.0)
        self.assertGreaterEqual(after["tracemalloc_peak_mb"], during["tracemalloc_current_mb"])


def cpython(minor):
    """The CPython 3.minor the Python-frame tests run, or None: Debian's
    /usr/bin/python3.11; else $MT_PYTHON3<minor>, else pyenv's highest
    3.minor build (as tests/common/test_pythons.h finds them)."""
    import glob

    if minor == 11:
        path = "/usr/bin/python3.11"
        return path if os.access(path, os.X_OK) else None
    env = os.environ.get(f"MT_PYTHON3{minor}")
    if env:
        return env if os.access(env, os.X_OK) else None
    roots = [os.environ.get("PYENV_ROOT"), os.path.expanduser("~/.pyenv"), "/root/.pyenv"]
    for root in filter(None, roots):
        found = sorted(glob.glob(f"{root}/versions/3.{minor}.*/bin/python3.{minor}"))
        found = [f for f in found if os.access(f, os.X_OK)]
        if found:
            return found[-1]
    return None


class TestPythonSites(Tmp):
    """read_sites against memsup's own stacks.json of a real run of a
    Python program (tests/progs/py_sites.py: 50/30/20% of its peak in three
    functions): the same Python frames, with the same names, files and
    lines, holding the same bytes at the image's peak."""

    def sites_as_stacks_json(self, minor):
        interp = cpython(minor)
        if interp is None:
            self.skipTest(f"no CPython 3.{minor} (3.11: /usr/bin/python3.11; others: "
                          f"MT_PYTHON3{minor} or ~/.pyenv/versions/3.{minor}.*)")
        prog = SRCDIR / "tests" / "progs" / "py_sites.py"
        record = memsup.measure_command([interp, str(prog), "120"], self.out)
        self.assertEqual(record["exit_code"], 0)
        st = json.loads((self.out / "stacks.json").read_text())
        frames = st["frames"]
        sites = memsup.read_sites(self.out)
        self.assertEqual(set(sites), {(i["pid"], i["gen"]) for i in st["images"]})
        alloc = {}
        for no, line in enumerate(prog.read_text().splitlines(), 1):
            if "# ALLOC " in line:
                alloc[line.split("# ALLOC ")[1].strip()] = no
        for img in st["images"]:
            got = sites[(img["pid"], img["gen"])]
            self.assertEqual(got["python"], img["python"])
            self.assertEqual(got["python"]["frames"], "python")
            self.assertTrue(got["python"]["version"].startswith(f"3.{minor}."))
            self.assertEqual(img["at_peak"]["from"], "peak")
            # {Python frames (function, file, line), innermost first: bytes}
            # at the image's peak, by stacks.json and by read_sites
            want, have = {}, {}
            for site in img["at_peak"]["sites"]:
                key = tuple((frames[i]["function"], frames[i]["file"], frames[i]["line"])
                            for i in site["frames"] if frames[i].get("python"))
                want[key] = want.get(key, 0) + site["bytes"]
            for stack in got["stacks"]:
                if stack["peak_bytes"]:
                    key = tuple((f["function"], f["file"], f["line"])
                                for f in stack["frames"] if f.get("python"))
                    self.assertEqual(bool(key), stack["python"])
                    have[key] = have.get(key, 0) + stack["peak_bytes"]
            self.assertEqual(have, want)
            # and that is the program's truth: each function at its line,
            # below the interpreter's native frames (bytearray's allocation)
            for fn in ("half", "thirty", "twenty"):
                key = next(k for k in have if k and k[0][0] == fn)
                self.assertEqual(key[0], (fn, str(prog), alloc[fn]))
                self.assertEqual(key[-1][0], "<module>")
                stack = next(s for s in got["stacks"] if s["python"] and s["peak_bytes"]
                             and s["frames"][-3].get("function") == fn)
                self.assertIn("python", os.path.basename(stack["frames"][0]["module"]))

    def test_read_sites_python_311(self):
        self.sites_as_stacks_json(11)

    def test_read_sites_python_312(self):
        self.sites_as_stacks_json(12)

    def test_read_sites_python_313(self):
        self.sites_as_stacks_json(13)


class TestFind(unittest.TestCase):
    def test_build_tree_copy_finds_its_memsup(self):
        built = os.environ.get("MEMSUP")
        if not built:
            self.skipTest("MEMSUP not set (not run by make check)")
        builddir = Path(built).resolve().parent.parent
        copy = builddir / "python" / "memsup.py"
        if not copy.exists():
            self.skipTest(f"{copy} not built")
        env = child_env(PATH="/usr/bin:/bin")
        env.pop("MEMSUP", None)
        done = subprocess.run(
            [sys.executable, "-c",
             "import sys; sys.path.insert(0, sys.argv[1]); import memsup;"
             "print(memsup._INSTALLED_BINDIR is not None, memsup.find_memsup())",
             str(copy.parent)], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        installed, found = done.stdout.split()
        self.assertEqual(installed, "True")  # make wrote $(bindir) in
        self.assertEqual(Path(found), builddir / "supervisor" / "memsup")

    def test_no_memsup_anywhere_is_a_clear_error(self):
        env = child_env(PATH="/nonexistent")
        env.pop("MEMSUP", None)
        done = subprocess.run(
            [sys.executable, "-c",
             "import sys; sys.path.insert(0, sys.argv[1]); import memsup\n"
             "try:\n    print(memsup.find_memsup())\n"
             "except RuntimeError as e:\n    print('error', e)", str(SCRIPTS)],
            env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        if done.stdout.startswith("error"):
            self.assertIn("set MEMSUP", done.stdout)
        else:  # a source tree configured in place has its own memsup
            self.assertEqual(Path(done.stdout.strip()), (SRCDIR / "supervisor" / "memsup"))


OOM_DATA = SRCDIR / "tests" / "data" / "oom"

# A record of a run that ended on its own, for the keys of tests/data/oom.
OOM_BASE = {"command": ["/bin/job"], "exit_code": -9, "signal": 9, "exit_status": 137,
            "reason": None, "wall_s": 5.0, "peak_tree_rss_mb": 150.0, "peak_mb": 150.0,
            "peak_source": "cgroup", "blind_spots": []}

# Records forged key by key, and what is said of each (oomkills.c's words;
# tests/unit/test_oomkills.c forges the same keys).
OOM_FORGED = [
    ({"oom": "pid 4242 was killed"}, '"oom": not an array or null'),
    ({"oom": {"at_s": 1}}, '"oom": not an array or null'),
    ({"oom": [{"at_s": 1}, 7]}, '"oom"[1]: not an object'),
    ({"oom": [{"victim": "4242"}]}, '"oom"[0].victim: not an object'),
    ({"oom": [{"victim": None}]}, '"oom"[0].victim: not an object'),
    ({"oom": [{"at_s": "4.5"}]}, '"oom"[0].at_s: not a number'),
    ({"oom": [{"victim": {"pid": "4242"}}]}, '"oom"[0].victim.pid: not an integer or null'),
    ({"oom": [{"victim": {"pid": 42.5}}]}, '"oom"[0].victim.pid: not an integer or null'),
    ({"oom": [{"victim": {"pid": True}}]}, '"oom"[0].victim.pid: not an integer or null'),
    ({"oom": [{"victim": {"argv": ["a", 1]}}]},
     '"oom"[0].victim.argv: not an array of strings or null'),
    ({"oom": [{"victim": {"lineage": None}}]}, '"oom"[0].victim.lineage: not an array of integers'),
    ({"oom": [{"victim": {"top_sites": [{"site": "f", "mb": 1}, "g"]}}]},
     '"oom"[0].victim.top_sites[1]: not an object'),
    ({"oom": [{"victim": {"top_sites": [{"site": "f", "mb": "1"}]}}]},
     '"oom"[0].victim.top_sites[0].mb: not a number'),
    ({"oom": [{"limit": {"by": None}}]}, '"oom"[0].limit.by: not a string'),
    ({"oom": [{"tree": {"processes": [{"pid": 1, "victim": 1}]}}]},
     '"oom"[0].tree.processes[0].victim: not true or false'),
    ({"oom": [{"at_s": 1}, {"tree": {"processes_total": 2.5}}]},
     '"oom"[1].tree.processes_total: not an integer'),
    ({"oom": [{"tree": []}]}, '"oom"[0].tree: not an object or null'),
]


def oom_fixture(name):
    return json.loads((OOM_DATA / f"{name}.json").read_text(encoding="utf-8"))


class TestReadOom(unittest.TestCase):
    """read_oom over the hand-written keys every reader of "oom" is fed."""

    def test_fixtures(self):
        want = {  # name: (count, the victims' pids, the first's comm and limit)
            "one_kill": (1, [4242], "python", "run"),
            "two_kills": (2, [5001, 5000], "worker", "inside"),
            "none": (0, [], None, None),
            "unseen": (None, [], None, None),
            "older": (1, [], None, None),
            "unnamed": (1, [None], None, "above"),
            "odd_comm": (1, [6006], "it's-\u00e9\udcff", "machine"),
        }
        for name, (count, pids, comm, by) in want.items():
            with self.subTest(name):
                got = memsup.read_oom({**OOM_BASE, **oom_fixture(name)})
                self.assertEqual(got.count, count)
                self.assertEqual([k["victim"]["pid"] for k in got.kills], pids)
                if got.kills:
                    self.assertEqual(got.kills[0]["victim"]["comm"], comm)
                    self.assertEqual(got.kills[0]["limit"]["by"], by)

    def test_count_is_the_larger(self):
        for keys, count in [({"oom_kills": 40, "oom": [{"at_s": 1}]}, 40),
                            ({"oom_kills": None, "oom": [{"at_s": 1}, {"at_s": 2}]}, 2),
                            ({"oom_kills": 2, "oom": None}, 2),
                            ({"oom_kills": None, "oom": [{"at_s": 1}], "oom_unlisted": 4}, 5),
                            ({"oom_kills": 20, "oom": [{"at_s": 1}], "oom_unlisted": 4}, 20),
                            ({"oom_kills": 0, "oom": None}, None),
                            ({"oom_kills": "3"}, None),
                            ({}, None)]:
            with self.subTest(keys):
                self.assertEqual(memsup.read_oom(keys).count, count)

    def test_absent_and_extra_keys_are_no_error(self):
        got = memsup.read_oom({"oom": [{"at_s": 1.5, "why": "new key", "limit": {"by": "x"},
                                        "victim": {}, "tree": None}]})
        self.assertEqual(got.count, 1)

    def test_forged_is_named(self):
        for name, says in [("forged_string", '"oom": not an array or null'),
                           ("forged_victim", '"oom"[0].victim: not an object')]:
            with self.subTest(name), self.assertRaises(ValueError) as caught:
                memsup.read_oom({**OOM_BASE, **oom_fixture(name)})
            self.assertEqual(str(caught.exception), f"resources.json: {says}")
        for keys, says in OOM_FORGED:
            with self.subTest(keys), self.assertRaises(ValueError) as caught:
                memsup.read_oom(keys)
            self.assertEqual(str(caught.exception), f"resources.json: {says}")

    def test_measure_command_record_reads(self):
        """What memsup itself writes reads without an error."""
        tmp = Path(tempfile.mkdtemp(prefix="memsup-py."))
        try:
            record = memsup.measure_command(["true"], tmp / "run")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        got = memsup.read_oom(record)
        self.assertIn(got.count, (0, None))
        self.assertEqual(got.kills, [])

    def test_memsup_report_agrees(self):
        """memsup report (oomkills.c) and read_oom say the same of each
        record: the count, the first victim, whose limit, or why not."""
        records = [(name, {**OOM_BASE, **oom_fixture(name)}) for name in
                   ("one_kill", "two_kills", "none", "unseen", "older", "unnamed", "odd_comm",
                    "forged_string", "forged_victim")]
        records += [(f"forged{i}", {**OOM_BASE, **keys}) for i, (keys, _) in enumerate(OOM_FORGED)]
        tmp = Path(tempfile.mkdtemp(prefix="memsup-py."))
        try:
            for name, record in records:
                d = tmp / name
                d.mkdir()
                # as memsup writes it: a byte that is not UTF-8 as \udcXX
                (d / "resources.json").write_text(json.dumps(record), encoding="utf-8",
                                                  errors="surrogatepass")
                (d / "processes.json").write_text("[]\n")
            done = subprocess.run([memsup.find_memsup(), "report", "--json",
                                   *[str(tmp / name) for name, _ in records]],
                                  capture_output=True, timeout=60)
            self.assertEqual(done.returncode, 1, done.stderr)  # forged rows are broken
            rows = json.loads(done.stdout.decode("utf-8", "surrogateescape"))
            for (name, record), row in zip(records, rows, strict=True):
                with self.subTest(name):
                    try:
                        got = memsup.read_oom(record)
                    except ValueError as failure:
                        self.assertEqual(row["status"], f"broken: {failure}")
                        self.assertIsNone(row["oom_kills"])
                        continue
                    self.assertEqual(row["status"], "ok")
                    self.assertEqual(row["oom_kills"], got.count)
                    first = got.kills[0] if got.kills else {}
                    self.assertEqual(row["oom_victim_pid"], first.get("victim", {}).get("pid"))
                    self.assertEqual(row["oom_victim_comm"], first.get("victim", {}).get("comm"))
                    self.assertEqual(row["oom_limit_by"], first.get("limit", {}).get("by"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class TapResult(unittest.TestResult):
    """One TAP test point per test; subtest failures fail their test."""

    def __init__(self):
        super().__init__()
        self.number = 0
        self.problems = []
        self.skip_reason = None

    def startTest(self, test):
        super().startTest(test)
        self.problems, self.skip_reason = [], None

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.problems.append(self._exc_info_to_string(err, test))

    def addError(self, test, err):
        super().addError(test, err)
        self.problems.append(self._exc_info_to_string(err, test))

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self.problems.append(f"{subtest}: " + self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.skip_reason = reason

    def stopTest(self, test):
        super().stopTest(test)
        self.number += 1
        name = test.id().split(".", 1)[-1]
        if self.problems:
            print(f"not ok {self.number} - {name}")
            for text in self.problems:
                for line in text.rstrip().splitlines():
                    print(f"# {line}")
        elif self.skip_reason is not None:
            print(f"ok {self.number} - {name} # SKIP {self.skip_reason}")
        else:
            print(f"ok {self.number} - {name}")
        sys.stdout.flush()


def main():
    if not sys.platform.startswith("linux") or not os.path.isdir("/proc"):
        print("1..0 # SKIP needs Linux with /proc")
        return 0
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    if len(sys.argv) > 1:  # a name filter, for running one test by hand
        suite = unittest.TestSuite(t for t in _flatten(suite) if sys.argv[1] in t.id())
    print(f"1..{suite.countTestCases()}")
    sys.stdout.flush()
    result = TapResult()
    suite.run(result)
    return 0 if result.wasSuccessful() else 1


def _flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _flatten(item)
        else:
            yield item


if __name__ == "__main__":
    sys.exit(main())
