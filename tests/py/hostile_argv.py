"""hostile_argv.py: run by tests/e2e/test_memsup_hostile.c (run_argv_case:
hundred_thousand_arguments, every_byte_value_kept_exactly,
every_byte_value_in_env).

    python3 tests/py/hostile_argv.py EVIDENCE_DIR EXPECTED DUMP MODE

EXPECTED is the command's argv as the test passed it and DUMP what the
command received (tests/progs/x_argdump), each as NUL-terminated strings.
Both must equal resources.json "command" and the argv of the traced root
image in processes.json, byte for byte (the JSON strings turned back into
bytes with surrogateescape: memsup writes a byte that is not UTF-8 as
\\udcXX).  MODE "exact": the record kept the whole argv; "prefix": the
record's argv was cut (record.h: MT_ARGV_BYTES), which it must say (flag
MT_FLAG_ARGV_TRUNCATED, 1, in "flags"), keeping a prefix and the real argc
in the record file (read with scripts/memsup.py).  Exits non-zero with the
first difference when one does not hold.  Standard library only (and
scripts/memsup.py).
"""
import json, os, struct, sys
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402
ev, expected, dump, mode = sys.argv[1:5]
def b(s): return s.encode('utf-8', 'surrogateescape')
def first_diff(a, c):
    for i, (x, y) in enumerate(zip(a, c)):
        if x != y: return 'first difference at %d: %r != %r' % (i, x[:80], y[:80])
    return 'lengths %d != %d' % (len(a), len(c))
want = open(expected, 'rb').read().split(b'\0')[:-1]
got = open(dump, 'rb').read().split(b'\0')[:-1]
assert got == want, 'the command received another argv: ' + first_diff(got, want)
r = json.load(open(ev + '/resources.json'))
cmd = [b(s) for s in r['command']]
assert cmd == want, 'resources.json command: ' + first_diff(cmd, want)
procs = memsup.read_processes(ev)
roots = [p for p in procs if p['traced'] and p['lineage']['relation'] == 'root']
assert len(roots) == 1, [p['pid'] for p in procs]
p = roots[0]
pa = [b(s) for s in p['argv']]
cut = p['record']['flags'] & 1
rec = memsup.read_records(ev)[(p['pid'], p['gen'])]
argc = struct.unpack_from('<I', rec, 44)[0]
assert argc == len(want), 'record argc %d, command had %d' % (argc, len(want))
assert p['argv_truncated'] == bool(cut), (p['argv_truncated'], cut)
assert p['argc'] == len(want), 'processes.json argc %r' % p['argc']
if mode == 'exact':
    assert not cut, 'argv flagged as truncated'
    assert pa == want, 'processes.json argv: ' + first_diff(pa, want)
else:
    assert cut, 'argv cut to %d of %d arguments without the flag' % (len(pa), len(want))
    assert 0 < len(pa) < len(want), len(pa)
    assert pa[:-1] == want[:len(pa) - 1], 'kept part: ' + first_diff(pa[:-1], want)
    assert want[len(pa) - 1].startswith(pa[-1]), (pa[-1], want[len(pa) - 1])
print('ok', len(want), 'arguments', 'exact' if mode == 'exact' else 'record keeps %d' % len(pa))
