"""bs_pychild.py: a Python parent that starts a Python child which allocates
MB (default 200) and holds it HOLD_MS (default 400); the parent allocates
nothing big.  The memory must be attributed to the child, by its argv
("... bs_pychild.py child MB HOLD_MS").
Usage: python3 bs_pychild.py [MB [HOLD_MS]]."""
import subprocess
import sys
import time


def child(mb, hold_ms):
    block = b"\x01" * (mb * 1000000)  # bytes(n) would leave pages untouched
    time.sleep(hold_ms / 1000)
    return len(block)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "child":
        child(int(sys.argv[2]), int(sys.argv[3]))
        return
    mb = sys.argv[1] if len(sys.argv) > 1 else "200"
    hold = sys.argv[2] if len(sys.argv) > 2 else "400"
    subprocess.run([sys.executable, __file__, "child", mb, hold], check=True)
    print("bs_pychild: child of %s MB done" % mb)


main()
