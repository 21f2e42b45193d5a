#!/usr/bin/env python3
"""diff_false_alarms.py: how often `memsup diff` fails identical runs, and
whether it catches a real growth (a gate that does not cry wolf).

Three workloads, each run --pairs*2 times unchanged and --pairs times with
one call site grown by --grow percent:
  python   a Python program: three functions holding 20, 12 and 6 MB of
           bytearrays of 2 to 64 KiB (the grown one: the first)
  c        bench/diff_sites 1: twelve C sites, one of 30 MB (the grown one)
           and eleven of 1.5 to 6.5 MB, in blocks of 1 to 64 KiB
  tree     bench/diff_sites 3: the same in three processes at once
For each workload, `memsup diff BASE NEW` (default limits) over --pairs
pairs of unchanged runs (a false alarm: exit 1) and --pairs pairs of an
unchanged and a grown run (a miss: exit 0).  The table is counts; they
repeat up to the sampler's draws.  Runs inside scripts/pids-guard.sh.

    scripts/pids-guard.sh python3 bench/diff_false_alarms.py [--pairs 20]
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

PY = r'''
import sys, time
grow = int(sys.argv[1])
keep = []
def f(mb, seed):
    x, held = seed, 0
    while held < mb * 1000000:
        x = (x * 1103515245 + 12345) % 2**31
        n = 2048 + x % (62 * 1024)
        keep.append(bytearray(n)); held += n
def load_table(): f(20 * (100 + grow) // 100, 1)
def load_index(): f(12, 2)
def load_names(): f(6, 3)
load_table(); load_index(); load_names()
time.sleep(0.2)
'''


def run(memsup, d, cmd):
    p = subprocess.run([memsup, '-q', '-o', d, '--'] + cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f'{cmd}: memsup exited {p.returncode}: {p.stderr}')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--builddir', default=None)
    ap.add_argument('--pairs', type=int, default=20)
    ap.add_argument('--grow', type=int, default=30)
    a = ap.parse_args()
    benchlib.require_pids_guard('diff_false_alarms.py', 'each run forks')
    b = benchlib.find_builddir(a.builddir)
    memsup = str(benchlib.memsup_path(b))
    sites = str(benchlib.bench_program(b, 'diff_sites'))
    work = {
        'python': lambda g: ['python3', '-c', PY, str(g)],
        'c': lambda g: [sites, '1', str(g)],
        'tree': lambda g: [sites, '3', str(g)],
    }
    rows = []
    total_fa = total_miss = 0
    with tempfile.TemporaryDirectory() as t:
        for name, cmd in work.items():
            plain = []
            for i in range(2 * a.pairs):
                d = os.path.join(t, f'{name}-plain-{i}')
                run(memsup, d, cmd(0))
                plain.append(d)
            grown = []
            for i in range(a.pairs):
                d = os.path.join(t, f'{name}-grown-{i}')
                run(memsup, d, cmd(a.grow))
                grown.append(d)
            fa = miss = 0
            worst = ''
            for i in range(a.pairs):
                p = subprocess.run([memsup, 'diff', plain[2 * i], plain[2 * i + 1]],
                                   capture_output=True, text=True)
                if p.returncode == 1:
                    fa += 1
                    worst = worst or p.stdout.splitlines()[1:3]
                elif p.returncode != 0:
                    sys.exit(f'memsup diff exited {p.returncode}: {p.stderr}')
                p = subprocess.run([memsup, 'diff', plain[2 * i], grown[i]],
                                   capture_output=True, text=True)
                if p.returncode == 0:
                    miss += 1
                elif p.returncode != 1:
                    sys.exit(f'memsup diff exited {p.returncode}: {p.stderr}')
            total_fa += fa
            total_miss += miss
            rows.append([name, f'{fa} of {a.pairs}', f'{miss} of {a.pairs}'])
            if worst:
                print(f'# {name}: a false alarm said: {worst}')
    print(benchlib.facts_line(benchlib.machine_facts()))
    print(f'memsup diff, default limits; --pairs {a.pairs}, growth +{a.grow}% at one site\n')
    print(benchlib.md_table(['workload', 'false alarms (identical pairs)',
                             f'misses (+{a.grow}% at one site)'], rows))
    n = len(work) * a.pairs
    print(f'\nin all: {total_fa} false alarms in {n}, {total_miss} misses in {n}')


if __name__ == '__main__':
    main()
