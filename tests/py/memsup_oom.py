"""memsup_oom.py: the checks of tests/e2e/test_memsup_oom.c.

    python3 tests/py/memsup_oom.py CHECK EVIDENCE_DIR [ARG]

CHECK names one of the functions below (the test's own name).  The record
is read with the json module (a real parser, not memsup's).  The truth:
tests/progs/oom_three holds 20, 40 and 100 MB of malloc'd, touched memory
in three children (the 100 MB in load_table()), writes their pids to
TMP/pids ("a=PID b=PID c=PID"), then grows by 2 MB steps until the limit
makes the kernel kill the largest: child c.  Standard library only.
"""
import json, os, sys

CHECK = sys.argv.pop(1)
d = sys.argv[1]
arg = sys.argv[2] if len(sys.argv) > 2 else ''
rec = json.load(open(os.path.join(d, 'resources.json')))
C_MB = 100


def pids():
    text = open(os.path.join(os.path.dirname(d), 'pids')).read().split()
    return {k: int(v) for k, v in (w.split('=') for w in text)}


def oom_finding():
    f = [b for b in rec['blind_spots'] if b['kind'] == 'oom_kill']
    assert f, [b['kind'] for b in rec['blind_spots']]
    assert rec['blind_spots'][0]['kind'] == 'oom_kill', 'the OOM kill is not said first'
    return f[0]


def the_largest_is_named(source):
    """The first kill is child c's: named, sized within 3%, its site
    load_table, the tree around it, the limit said."""
    kids = pids()
    oom = rec['oom']
    assert isinstance(oom, list) and oom, rec.get('oom')
    assert rec['oom_kills'] >= len(oom), (rec['oom_kills'], len(oom))
    k = oom[0]
    v = k['victim']
    assert v['pid'] == kids['c'], f"victim {v['pid']}, the largest was {kids['c']}: {k}"
    if source:
        assert k['source'] == source, (k['source'], k['evidence'], rec.get('oom_log'))
    # the kernel's event wakes memsup at once; on a loaded machine a
    # periodic sample (every 20 ms here) can still read the counter first
    assert k['woken_by'] in ('kernel_event', 'sample'), k
    if k['woken_by'] == 'kernel_event':
        assert k['after_event_ms'] is not None and k['after_event_ms'] >= 0, k
    else:
        assert k['after_event_ms'] is None, k
    # its size: the kernel's anon+file+shmem, or its last sample's RSS
    assert abs(v['rss_mb'] - C_MB) <= 0.03 * C_MB, f"victim {v['rss_mb']} MB, held {C_MB}"
    assert v['heap_mb'] is not None and abs(v['heap_mb'] - C_MB) <= 0.03 * C_MB, v
    assert v['top_sites'], v
    assert v['top_sites'][0]['site'].startswith('load_table'), v['top_sites']
    assert abs(v['top_sites'][0]['mb'] - C_MB) <= 0.03 * C_MB, v['top_sites']
    assert v['lineage'][0] == rec['pid'] and v['lineage'][-1] == v['pid'], v['lineage']
    assert v['argv'] and v['argv'][0].endswith('oom_three'), v['argv']
    if k['source'] == 'kernel_log':
        assert v['comm'] == 'oom_three' and v['anon_rss_mb'] >= C_MB * 0.97, v
    t = k['tree']
    by_pid = {p['pid']: p for p in t['processes']}
    for name, mb in (('a', 20), ('b', 40)):
        p = by_pid.get(kids[name])
        assert p and abs(p['heap_mb'] - mb) <= 0.03 * mb and not p['victim'], (name, p)
    assert by_pid[kids['c']]['victim'], t
    assert t['processes_total'] == 4, t
    assert t['cgroup_mb'] is not None and t['anon_mb'] is not None, t
    f = oom_finding()
    assert f'pid {kids["c"]}' in f['sentence'] and 'load_table' in f['sentence'], f
    assert f['victim_pid'] == kids['c'], f
    return k


def oom_kill_names_the_largest():
    k = the_largest_is_named(None if arg == 'any' else 'kernel_log')
    lim = k['limit']
    assert lim['by'] == 'run', lim
    assert abs(lim['limit_mb'] - 200) < 1, lim
    assert 'run' in oom_finding()['sentence'], oom_finding()
    print(k['evidence'], '| woken', k['after_event_ms'], 'ms after the event')


def oom_inferred_without_the_log():
    k = the_largest_is_named('inferred')
    assert rec['oom_log'] != 'read' and 'victims are inferred' in rec['oom_log'], rec['oom_log']
    assert k['evidence'].startswith('inferred'), k['evidence']
    lim = k['limit']
    assert lim['by'] == 'run' and abs(lim['limit_mb'] - 200) < 1, (lim, k['evidence'])
    print(k['evidence'])


def limit_above_the_run_is_named():
    """arg: the parent cgroup's directory, below the hierarchy's mount."""
    k = the_largest_is_named(None)
    lim = k['limit']
    assert lim['by'] == 'above', (lim, k['evidence'])
    assert lim['cgroup'] and lim['cgroup'].endswith('/' + os.path.basename(arg)), (lim, arg)
    assert abs(lim['limit_mb'] - 190) < 1, lim
    assert rec['reason'] is None and rec['exit_code'] == 0, (rec['reason'], rec['exit_code'])
    assert 'above the run' in oom_finding()['sentence'], oom_finding()
    print(k['evidence'])


def kill_9_is_not_an_oom():
    assert rec['oom'] == [], rec['oom']
    assert rec['oom_kills'] == 0, rec['oom_kills']
    assert not [b for b in rec['blind_spots'] if b['kind'] == 'oom_kill'], rec['blind_spots']


globals()[CHECK]()
