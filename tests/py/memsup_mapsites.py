"""memsup_mapsites.py: the checks of tests/e2e/test_memsup_mapsites.c.

    python3 tests/py/memsup_mapsites.py CHECK EVIDENCE_DIR

CHECK names one of the functions below (the test's own name).  Most runs
are of tests/progs/map_sites, whose stdout line (kept in stdout.log) is
the truth: the bytes each function holds mapped at the peak.  stacks.json
is read with the json module (a real parser, not memsup's).  A check
exits non-zero with the assertion's message when the sites disagree with
the truth; what it prints the test logs.  Standard library and scripts/memsup.py.
"""
import json, os, re, sys
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402

CHECK = sys.argv.pop(1)
d = sys.argv[1]
st = json.load(open(os.path.join(d, 'stacks.json')))
frames = st['frames']
FNS = {'sixty': 'hold_sixty', 'thirty': 'hold_thirty', 'ten': 'hold_ten',
       'partial': 'hold_partial', 'grown': 'hold_grown', 'early': 'drop_early'}


def truth():
    m = re.search(r'pid=(\d+) sixty=(\d+) thirty=(\d+) ten=(\d+) partial=(\d+) '
                  r'grown=(\d+) early=(\d+) heap=(\d+)',
                  open(os.path.join(d, 'stdout.log')).read())
    assert m, 'no truth line in stdout.log'
    v = [int(x) for x in m.groups()]
    t = dict(zip(['sixty', 'thirty', 'ten', 'partial', 'grown', 'early'], v[1:7]))
    return v[0], {FNS[k]: b for k, b in t.items()}, v[7]


def site_fn(s):
    return frames[s['frames'][0]]['function'] if s['frames'] else None


def by_fn(sites, kind):
    out = {}
    for s in sites:
        if s['kind'] == kind:
            out[site_fn(s)] = out.get(site_fn(s), 0) + s['bytes']
    return out


def image(pid):
    ims = [i for i in st['images'] if i['pid'] == pid]
    assert len(ims) == 1, st['images']
    return ims[0]


def shares_at_the_default_interval():
    pid, t, heap = truth()
    assert st['sample_bytes'] == 524288, st['sample_bytes']
    held = {f: b for f, b in t.items() if f != 'drop_early'}
    want_all = sum(held.values())
    for where, s in (('own peak', image(pid)['at_peak']),
                     ('tree RSS peak', st['tree']['rss_peak'])):
        got = by_fn(s['sites'], 'mmap')
        est = sum(got.values())
        print('%s: mmap sites est. %.1f MB +- %.1f MB, true %.1f MB' %
              (where, est / 1e6, s['se_bytes'] / 1e6, want_all / 1e6))
        assert abs(est - want_all) <= 4 * s['se_bytes'] + 0.01 * want_all, (est, want_all)
        for f, b in held.items():
            share, want = got.get(f, 0) / est, b / want_all
            print('  %s: estimated %.1f%%, true %.1f%%' % (f, 100 * share, 100 * want))
            assert abs(share - want) <= 0.05, (where, f, share, want)
        assert not got.get('drop_early'), ('unmapped before the peak', got)
        assert set(got) == set(held), got
        assert all(s2['kind'] in ('heap', 'mmap') for s2 in s['sites']), s['sites']
    folded = [l.rsplit(' ', 1) for l in open(os.path.join(d, 'flame.folded'))]
    mm = [l for l in folded if ';[mmap];' in l[0]]
    # the innermost frame, named 'function (file:line)' where DWARF says
    assert {l[0].rsplit(';', 1)[1].split(' (')[0] for l in mm} == set(held), mm
    assert not any('hold_' in l[0] for l in folded if ';[mmap];' not in l[0]), folded
    svg = open(os.path.join(d, 'flame.svg')).read()
    assert '[mmap]' in svg and 'hold_sixty' in svg


def exact_with_every_mapping_sampled():
    pid, t, heap = truth()
    assert st['sample_bytes'] == 1, st['sample_bytes']
    im = image(pid)
    got = by_fn(im['at_peak']['sites'], 'mmap')
    for f, b in t.items():
        print('%s: %d bytes at the peak, true %d' % (f, got.get(f, 0), 0 if f == 'drop_early' else b))
        assert got.get(f, 0) == (0 if f == 'drop_early' else b), (f, got.get(f), b)
    assert im['at_peak']['se_bytes'] == 0, im['at_peak']
    assert by_fn(im['at_peak']['sites'], 'heap') == {'main': heap}, im['at_peak']['sites']
    # the partial region's two pieces, the grown region once
    parts = [s for s in im['at_peak']['sites'] if site_fn(s) == 'hold_partial']
    assert sum(s['samples'] for s in parts) == 2, parts
    # everything was unmapped (and freed) before the exit
    assert not im['at_exit']['sites'], im['at_exit']
    # the tree's heap peak is while everything is held (map_sites mallocs last)
    tree = by_fn(st['tree']['heap_peak']['sites'], 'mmap')
    assert tree == {f: b for f, b in t.items() if f != 'drop_early'}, tree


def malloc_mappings_stay_heap():
    kinds = {s['kind'] for i in st['images'] for s in i['at_peak']['sites']}
    assert kinds == {'heap'}, kinds
    t = st['tree']['heap_peak']
    assert t['estimated_bytes'] == t['traced_heap'], t
    assert not os.path.exists(os.path.join(d, 'flame.folded')) or \
        '[mmap]' not in open(os.path.join(d, 'flame.folded')).read()


def python_arenas_have_call_sites():
    P = memsup.read_processes(d)
    # the interpreter's image (python3 may be a wrapper script that execs it)
    def mapped(i):
        return sum(s['bytes'] for s in i['at_peak']['sites'] if s['kind'] == 'mmap')
    im = max(st['images'], key=mapped)
    mm = [s for s in im['at_peak']['sites'] if s['kind'] == 'mmap']
    est = sum(s['bytes'] for s in mm)
    se = im['at_peak']['se_bytes']
    procs = [p for p in P if p['pid'] == im['pid'] and p['gen'] == im['gen']]
    assert procs, P
    rec = procs[0]['record']
    anon_peak = rec['maps']['anon_peak']
    print('python3: mmap sites est. %.1f MB (+- %.1f MB for all sites) in %d sites; '
          'record: map_anon_peak %.1f MB, heap_peak %.1f MB' %
          (est / 1e6, se / 1e6, len(mm), anon_peak / 1e6, rec['heap']['peak'] / 1e6))
    assert anon_peak > 20e6, ('pymalloc arenas expected', rec)
    # the arenas live at the image's peak are (nearly) all of its anonymous
    # mappings: within 4 standard errors and 10% of the mapped peak
    assert abs(est - anon_peak) <= 4 * se + 0.10 * anon_peak, (est, anon_peak, se)
    # and the sites are the interpreter's arena allocator, not the catch-all
    assert all(s['frames'] for s in mm), mm
    fns = {frames[s['frames'][0]]['function'] for s in mm if s['bytes'] > 0.1 * est}
    print('the largest mmap sites\' first frames: %s' % sorted(f or '?' for f in fns))
    assert fns and None not in fns, fns


globals()[CHECK]()
