"""memsup_stacks.py: the checks of tests/e2e/test_memsup_stacks.c.

Each test there runs memsup on tests/progs/site_shares (50%, 30% and 20%
of its heap in three functions, in two processes at once; it prints the
truth, usable bytes per function per process, on stdout, which memsup
keeps in stdout.log) and then
    python3 tests/py/memsup_stacks.py CHECK EVIDENCE_DIR
where CHECK names one of the functions below (the test's own name).  The
module reads stacks.json (json module: a real parser, not memsup's) and
the truth; the check compares the sampled call sites with it and exits
non-zero with the assertion's message when they disagree.  What it prints
the test logs.  Standard library and scripts/memsup.py.
"""
import json, os, re, sys
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402

CHECK = sys.argv.pop(1)  # the rest as before: argv[1] the evidence
d = sys.argv[1]
st = json.load(open(os.path.join(d, 'stacks.json')))
frames = st['frames']
truth = {}
for m in re.finditer(r'pid=(\d+) half=(\d+) three_tenths=(\d+) fifth=(\d+)',
                     open(os.path.join(d, 'stdout.log')).read()):
    truth[int(m.group(1))] = {'hold_half': int(m.group(2)),
        'hold_three_tenths': int(m.group(3)), 'hold_fifth': int(m.group(4))}
assert len(truth) == 2, truth
def site_fn(s):
    return frames[s['frames'][0]]['function'] if s['frames'] else None
def by_fn(sites, pid=None):
    out = {}
    for s in sites:
        if pid is None or s.get('pid') == pid:
            out[site_fn(s)] = out.get(site_fn(s), 0) + s['bytes']
    return out
FNS = ['hold_half', 'hold_three_tenths', 'hold_fifth']



def shares_at_the_tree_heap_peak():
    t = st['tree']['heap_peak']
    assert st['sample_bytes'] == 524288, st['sample_bytes']
    est, se, heap = t['estimated_bytes'], t['se_bytes'], t['traced_heap']
    got = by_fn(t['sites'])
    tot = {f: sum(truth[p][f] for p in truth) for f in FNS}
    all_true = sum(tot.values())
    for f in FNS:
        share, want = got.get(f, 0) / est, tot[f] / all_true
        print('%s: estimated %.1f%%, true %.1f%%' % (f, 100 * share, 100 * want))
        assert abs(share - want) <= 0.05, (f, share, want)
    print('estimated %.1f MB +- %.1f MB of %.1f MB traced' % (est / 1e6, se / 1e6, heap / 1e6))
    assert abs(est - heap) <= 4 * se + 0.01 * heap, (est, se, heap)
    assert heap >= 0.99 * all_true, (heap, all_true)
    assert {s['pid'] for s in t['sites']} == set(truth), t['sites']
    # flame.svg and flame.folded are of the peak of heap plus mappings: a
    # program that maps nothing itself has its heap's sites there
    folded = sum(int(l.rsplit(' ', 1)[1])
                 for l in open(os.path.join(d, 'flame.folded')))
    assert folded == st['tree']['total_peak']['estimated_bytes'], (folded, st['tree'])
    assert abs(folded - est) <= 4 * se + 0.01 * heap, (folded, est, se)
    svg = open(os.path.join(d, 'flame.svg')).read()
    assert 'by call site at the tree' in svg and 'hold_three_tenths' in svg
    assert 'one standard error' in svg
    imgs = {i['pid']: i for i in st['images']}
    assert set(imgs) == set(truth), imgs.keys()
    for p, i in imgs.items():
        assert i['samples'] > 20 and i['error'] is None and i['finished'], i
        assert i['fp_stacks'] > 0, i
        assert i['cfi_fallback'] is False, i
    # the sites at the RSS peak are of the images whose heap
    # processes.json counts at that peak, and the heaps agree
    P = memsup.read_processes(d)
    at = {(p['pid'], p['gen']): p['at_peak'] for p in P if p['at_peak']}
    rp = st['tree']['rss_peak']
    assert sum(a['heap'] or 0 for a in at.values()) == rp['traced_heap'], (at, rp)
    counted = {k for k, a in at.items() if a['heap']}
    assert {(s['pid'], s['gen']) for s in rp['sites']} <= counted, (rp['sites'], at)


def exact_with_every_block_sampled():
    t = st['tree']['heap_peak']
    assert st['sample_bytes'] == 1 and t['se_bytes'] == 0, t
    for p in truth:
        got = by_fn(t['sites'], p)
        for f in FNS:
            assert got.get(f) == truth[p][f], (p, f, got.get(f), truth[p][f])
    assert t['estimated_bytes'] == t['traced_heap'], t
    for i in st['images']:
        own = by_fn(i['at_peak']['sites'])
        for f in FNS:
            assert own.get(f) == truth[i['pid']][f], (i['pid'], f, own)
        assert i['at_peak']['estimated_bytes'] == i['heap_peak'], i
        assert not by_fn(i['at_exit']['sites']).get('hold_half'), 'freed at exit'
    mods = {m['path'].rsplit('/', 1)[-1]: m for m in st['modules']}
    assert mods['site_shares']['symbols'] == 'named', mods
    assert mods['site_shares']['build_id'], mods


globals()[CHECK]()
