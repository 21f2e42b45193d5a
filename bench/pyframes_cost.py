#!/usr/bin/env python3
"""pyframes_cost.py: what reading CPython's frames costs a sample.

The walk (preload/sampling/python.c) runs only when a block is sampled, so its cost
is per sample, not per allocation.  Two measures:

1. Instructions (callgrind, repeatable): the interpreter runs a workload that
   allocates at DEPTH nested Python calls under the shim with a small
   sampling interval; callgrind collects only inside python_stack (the
   walk and the code table) and, separately, inside callstack_capture (the
   native unwinding every sample already paid).  Inclusive instructions
   divided by the calls are the per-sample figures.  They are user-space
   instructions: the walk's process_vm_readv calls cost kernel time that
   callgrind does not count, hence:
2. Time: memsup runs the same workload natively, with the walk and with
   it off (MEMTRACE_PY_VERSION set to a version the shim does not know),
   five times each; stacks.json's sample_ns / samples per image is the
   mean time a sample took (stack + table), median of the runs.

Usage: pyframes_cost.py [--builddir DIR] [--python PATH|3.N] [--runs N]
                        [--depths 0,10,30]
--python names the interpreter (default /usr/bin/python3.11), or a minor
version, 3.12 or 3.13, found as the tests find it (tests/common/
test_pythons.h: $MT_PYTHON312 / $MT_PYTHON313, else pyenv's highest build).
Python 3 standard library only.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

WORKLOAD = r'''
import sys
DEPTH = int(sys.argv[1])
def nest(d, keep):
    if d:
        return nest(d - 1, keep)
    for _ in range(20000):
        keep.append(bytearray(4096))
        if len(keep) > 2000:
            keep.clear()
def main():
    keep = []
    for _ in range(5):
        nest(DEPTH, keep)
main()
'''


def callgrind(py, shim, script, depth, fn, env):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'cg.out')
        e = dict(env, LD_PRELOAD=shim)
        subprocess.run(['valgrind', '--tool=callgrind', '--callgrind-out-file=' + out,
                        '--toggle-collect=' + fn, py, script, str(depth)],
                       env=e, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        ann = subprocess.run(['callgrind_annotate', '--inclusive=yes', out],
                             capture_output=True, text=True, check=True).stdout
        total = int(re.search(r'^([\d,]+)\s+\(100.0%\)\s+PROGRAM TOTALS', ann, re.M)
                    .group(1).replace(',', ''))
    return total


def calls(memsup, py, script, depth, env_args):
    with tempfile.TemporaryDirectory() as tmp:
        ev = os.path.join(tmp, 'ev')
        subprocess.run([memsup, '-q', '-o', ev] + env_args + ['--', py, script, str(depth)],
                       check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        st = json.load(open(os.path.join(ev, 'stacks.json')))
        img = st['images'][0]
        return img['samples'], img['sample_ns'], img['python']


def find_python(name):
    """An interpreter path, or 3.N found as tests/common/test_pythons.h does."""
    import glob
    m = re.fullmatch(r'3\.(\d+)', name)
    if not m:
        return name
    minor = m.group(1)
    if minor == '11':
        return '/usr/bin/python3.11'
    if os.environ.get('MT_PYTHON3' + minor):
        return os.environ['MT_PYTHON3' + minor]
    for root in filter(None, [os.environ.get('PYENV_ROOT'), os.path.expanduser('~/.pyenv'),
                              '/root/.pyenv']):
        found = sorted(glob.glob('%s/versions/3.%s.*/bin/python3.%s' % (root, minor, minor)))
        if found:
            return found[-1]
    sys.exit('no CPython 3.%s found (set MT_PYTHON3%s)' % (minor, minor))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--builddir')
    ap.add_argument('--python', default='/usr/bin/python3.11')
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--depths', default='0,10,30',
                    help='nested calls to measure at, comma-separated (default 0,10,30)')
    a = ap.parse_args()
    a.python = find_python(a.python)
    build = benchlib.find_builddir(a.builddir)
    shim, memsup = benchlib.shim_path(build), benchlib.memsup_path(build)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, 'workload.py')
        Path(script).write_text(WORKLOAD)
        env = dict(os.environ, MEMTRACE_SAMPLE_BYTES='65536', MEMTRACE_QUIET='1')
        print('python: %s, sampling interval 64 KiB' % a.python)
        for depth in [int(d) for d in a.depths.split(',')]:
            # the number of samples, as memsup counts them (the same
            # workload and interval give about the same count)
            n, _, py = calls(memsup, a.python, script, depth,
                             ['-e', 'MEMTRACE_SAMPLE_BYTES=65536'])
            frames = py['python_frames'] / max(py['python_samples'], 1)
            if shutil.which('valgrind'):
                walk = callgrind(a.python, shim, script, depth, 'python_stack', env)
                native = callgrind(a.python, shim, script, depth, 'callstack_capture', env)
                print('depth %2d: %.1f Python frames a sample; instructions a sample: '
                      'walk %.0f, native stack %.0f (callgrind, %d samples)'
                      % (depth, frames, walk / n, native / n, n))
            t_on, t_off = [], []
            for _ in range(a.runs):
                s, ns, _ = calls(memsup, a.python, script, depth,
                                 ['-e', 'MEMTRACE_SAMPLE_BYTES=65536'])
                t_on.append(ns / s)
                s, ns, _ = calls(memsup, a.python, script, depth,
                                 ['-e', 'MEMTRACE_SAMPLE_BYTES=65536',
                                  '-e', 'MEMTRACE_PY_VERSION=0x036300f0'])
                t_off.append(ns / s)
            print('depth %2d: time a sample (median of %d): %.1f us with the walk, '
                  '%.1f us without' % (depth, a.runs, statistics.median(t_on) / 1000,
                                        statistics.median(t_off) / 1000))


if __name__ == '__main__':
    main()
