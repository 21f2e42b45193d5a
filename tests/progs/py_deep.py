"""Allocations made deep in a Python stack and through C, for the deep
chains of tests/e2e/test_memsup_pyframes.c.

    py_deep.py MODE DEPTH

MODE says what allocates, DEPTH how many calls of the user's own lie
between main and it:
  deep       descend() recurses DEPTH times in Python, then alloc()
             allocates;
  roundtrip  through_c() recurses DEPTH times, each call entered from C
             (map over a functools.partial), then roundtrip() has map()
             call cb(), which allocates: Python called from C called from
             Python, all the way;
  numpy      descend() as in deep, then build() has numpy allocate (its
             random.rand in C, its sort through numpy's own Python).
Each allocating or calling line is marked "# ALLOC name" or "# CALL name"
so that the test finds it.  Every block is 4 MiB, sampled at the default
interval with probability 1 - e^-8, and all are held until the peak; the
truth (what each ALLOC line holds) is printed on stdout."""
import functools
import os
import sys

CHUNK = 4 << 20
COUNT = 12


def alloc(keep):
    for _ in range(COUNT):
        keep.append(bytearray(CHUNK))  # ALLOC alloc
    return {'alloc': COUNT * CHUNK}


def cb(_):
    return bytearray(CHUNK)  # ALLOC cb


def roundtrip(keep):
    keep.extend(map(cb, range(COUNT)))  # CALL roundtrip
    return {'cb': COUNT * CHUNK}


def build(keep):
    import numpy as np
    for _ in range(COUNT):
        a = np.random.rand(CHUNK // 8)  # ALLOC build_rand
        keep.append(a)
        keep.append(np.sort(a))  # ALLOC build_sort
    return {'build_rand': COUNT * CHUNK, 'build_sort': COUNT * CHUNK}


def descend(d, work, keep):
    if d:
        return descend(d - 1, work, keep)  # CALL descend
    return work(keep)  # CALL descend_work


def through_c(d, work, keep):
    if d:
        return list(map(functools.partial(through_c, d - 1, work), [keep]))[0]  # CALL through_c
    return work(keep)  # CALL through_c_work


def main():
    mode, depth = sys.argv[1], int(sys.argv[2])
    keep = []
    if mode == 'roundtrip':
        truth = through_c(depth, roundtrip, keep)  # CALL main_through_c
    else:
        truth = descend(depth, build if mode == 'numpy' else alloc, keep)  # CALL main_descend
    print('pid=%d mode=%s depth=%d %s' % (os.getpid(), mode, depth, ' '.join(
        '%s=%d' % kv for kv in sorted(truth.items()))), flush=True)
    keep.clear()


main()  # CALL module
