"""Three functions hold 50%, 30% and 20% of this program's peak, in
4 MiB bytearrays kept in a list until the peak has been reached (the
Python frames of tests/e2e/test_memsup_pyframes.c).  argv[1]: total MiB,
a multiple of 40 (default 200).  A block of 4 MiB is sampled at the default
interval with probability 1 - e^-8, so the shares come out within a
fraction of a point.  Each allocation's line is marked "# ALLOC <name>"
so that the test finds it; the truth is printed on stdout."""
import os
import sys

CHUNK = 4 << 20


def half(mb, keep):
    for _ in range(mb // 4):
        keep.append(bytearray(CHUNK))  # ALLOC half


def thirty(mb, keep):
    for _ in range(mb // 4):
        keep.append(bytearray(CHUNK))  # ALLOC thirty


def twenty(mb, keep):
    for _ in range(mb // 4):
        keep.append(bytearray(CHUNK))  # ALLOC twenty


def main():
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    keep = []
    half(total * 50 // 100, keep)
    thirty(total * 30 // 100, keep)
    twenty(total * 20 // 100, keep)
    print("pid=%d half=%d thirty=%d twenty=%d" % (
        os.getpid(), total * 50 // 100 << 20, total * 30 // 100 << 20,
        total * 20 // 100 << 20), flush=True)
    keep.clear()


main()
