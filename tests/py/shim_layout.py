"""shim_layout.py: which of the shim's functions a traced image ran, from a
callgrind output file, and where they lie in libmemtrace.so.

Usage: shim_layout.py SO CALLGRIND_OUT WINDOW_BYTES
Prints one line per function that ran and ends past the first WINDOW_BYTES
of SO's .text ("past NAME 0xSTART-0xEND"), then "ran N, past M".
Exits 0 when M is 0, 1 when not (or when the shim's constructor did not
run), 2 when the files cannot be read.

Why: the kernel maps a read fault's 64 KB neighbourhood of a file, so every
64 KB window of the shim's code that a traced image's start runs costs that
image a page fault (bench/RESULTS.md, the start faults).
"""
import re
import subprocess
import sys


def functions_run(callgrind_out, so_name):
    """The names callgrind charged cost to inside the object so_name.
    Its format names an object or function once, "ob=(7) /path", and
    afterwards by number, "ob=(7)"; cob=/cfn= lines (a call's callee)
    define names too but do not change whose cost follows."""
    names = {'ob': {}, 'fn': {}}
    current_ob = None
    ran = set()
    line_re = re.compile(r'^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$')
    with open(callgrind_out) as f:
        for line in f:
            m = line_re.match(line.rstrip('\n'))
            if not m:
                continue
            callee, kind, ident, name = m.groups()
            if name is not None:
                names[kind][ident] = name
            if callee:
                continue
            if kind == 'ob':
                current_ob = names['ob'].get(ident, '')
            elif current_ob and current_ob.endswith(so_name):
                # "name'2" is callgrind's mark of a recursion level
                ran.add(re.sub(r"'\d+$", '', names['fn'][ident]))
    return ran


def text_section(so):
    out = subprocess.run(['readelf', '-SW', so], check=True, capture_output=True,
                         text=True, env={'LC_ALL': 'C'}).stdout
    for line in out.splitlines():
        fields = line.replace('[ ', '[').split()
        if len(fields) > 4 and fields[1] == '.text':
            return int(fields[3], 16)
    raise ValueError('%s has no .text section' % so)


def symbols(so):
    """Function symbols, local ones too: name -> (start, end)."""
    out = subprocess.run(['nm', '--defined-only', '-S', so], check=True,
                         capture_output=True, text=True, env={'LC_ALL': 'C'}).stdout
    syms = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[2] in 'tTwW':
            start, size = int(fields[0], 16), int(fields[1], 16)
            syms[fields[3]] = (start, start + size)
    return syms


def main():
    if len(sys.argv) != 4:
        print('usage: shim_layout.py SO CALLGRIND_OUT WINDOW_BYTES', file=sys.stderr)
        return 2
    so, callgrind_out, window = sys.argv[1], sys.argv[2], int(sys.argv[3])
    try:
        ran = functions_run(callgrind_out, so.rsplit('/', 1)[-1])
        limit = text_section(so) + window
        syms = symbols(so)
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print('cannot read: %s' % e, file=sys.stderr)
        return 2
    if 'config_load' not in ran or 'life_start' not in ran:
        # the constructor's first calls: without them the image was not traced
        print('the shim did not start in this image (ran %d functions)' % len(ran))
        return 1
    past = 0
    for name in sorted(ran):
        if name.startswith('0x'):
            start = end = int(name, 16)   # a PLT stub: callgrind has no name
        elif name in syms:
            start, end = syms[name]
        else:
            print('unknown %s (not in the symbol table)' % name)
            past += 1
            continue
        if end > limit:
            print('past %s 0x%x-0x%x' % (name, start, end))
            past += 1
    print('ran %d, past %d' % (len(ran), past))
    return 1 if past else 0


if __name__ == '__main__':
    sys.exit(main())
