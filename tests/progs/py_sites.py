"""Three functions hold 50%, 30% and 20% of this program's peak, in
bytearrays kept in lists until the peak has been reached (tests of Python
frames, tests/unit/test_shim_pyframes.c).  argv[1]: total MB (default 150).
Each allocation's line is marked "# ALLOC <name>" so a test can find it."""
import sys

CHUNK = 1 << 20


def half(mb, keep):
    for _ in range(mb):
        keep.append(bytearray(CHUNK))  # ALLOC half


def thirty(mb, keep):
    for _ in range(mb):
        keep.append(bytearray(CHUNK))  # ALLOC thirty


def twenty(mb, keep):
    for _ in range(mb):
        keep.append(bytearray(CHUNK))  # ALLOC twenty


def main():
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    keep = []
    half(total * 50 // 100, keep)
    thirty(total * 30 // 100, keep)
    twenty(total * 20 // 100, keep)
    print("peak", len(keep))
    keep.clear()


main()
