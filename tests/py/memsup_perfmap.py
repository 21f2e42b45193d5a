"""memsup_perfmap.py: the checks of tests/e2e/test_memsup_perfmap.c.

    python3 tests/py/memsup_perfmap.py CHECK EVIDENCE_DIR

The run is tests/progs/jit_sites 20 with every block sampled: 20 MB
malloc'd by jit_target(), called from generated code that the program
named "jit_alloc_fn" in /tmp/perf-PID.map (after a line naming the same
address "jit_old_name").  Removes the map once read.  Standard library
only.
"""
import json, os, sys

CHECK, d = sys.argv[1], sys.argv[2]
st = json.load(open(os.path.join(d, 'stacks.json')))
procs = json.load(open(os.path.join(d, 'processes.json')))
frames, modules = st['frames'], st['modules']
pid = procs[0]['pid']
mapfile = '/tmp/perf-%d.map' % pid
try:
    os.unlink(mapfile)
except FileNotFoundError:
    pass
site = max(st['tree']['heap_peak']['sites'], key=lambda s: s['bytes'])
assert 19.9e6 <= site['bytes'] <= 20.1e6, site
fs = [frames[i] for i in site['frames']]
assert fs[0]['function'] == 'jit_target', fs
jit = fs[1]
print('frames:', [(f['function'], f.get('module')) for f in fs])


def named_by_the_perf_map():
    # the later line for the address wins, as perf takes it
    assert jit['function'] == 'jit_alloc_fn', jit
    m = modules[jit['module']]
    assert m['path'] == mapfile, m
    assert jit['file'] is None and jit['line'] is None, jit
    # the flame graph and the summary name it too
    folded = open(os.path.join(d, 'flame.folded')).read()
    assert 'jit_alloc_fn;jit_target' in folded, folded


def stale_map_names_nothing():
    # a map older than the process is another process's of the same pid
    assert jit['function'] is None and jit.get('module') is None, jit
    assert not any(m['path'] == mapfile for m in modules), modules


globals()[CHECK]()
