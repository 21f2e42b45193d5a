"""A Python parent that starts Python children: the Python frames of the
whole tree (tests/e2e/test_memsup_pyframes.c).  It holds 40 MiB itself in
größe_hält() (a name that is not ASCII: the shim copies it as UTF-8) while
its children, tests/progs/py_sites.py with argv[1] MiB each (default 80),
run one after the other with the same interpreter."""
import os
import subprocess
import sys

CHUNK = 4 << 20


def größe_hält(keep):
    for _ in range(10):
        keep.append(bytearray(CHUNK))  # ALLOC größe_hält


def run_children(mb):
    here = os.path.dirname(os.path.abspath(__file__))
    for _ in range(2):
        subprocess.run([sys.executable, os.path.join(here, "py_sites.py"), str(mb)],
                       check=True)


def main():
    keep = []
    größe_hält(keep)
    run_children(sys.argv[1] if len(sys.argv) > 1 else "80")
    print("parent pid=%d holds=%d" % (os.getpid(), 40 << 20), flush=True)


main()
