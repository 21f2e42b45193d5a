"""memsup_sites_peak.py: the check of tests/e2e/test_memsup_sites_peak.c.

That test runs memsup on tests/progs/sites_532 (one process; three call
sites holding 50%, 30% and 20% of its heap peak, touched, then freed at
once; it prints the truth, usable bytes per site, on stdout, which memsup
keeps in stdout.log), reads the process's record itself (records.fold or
records/), and then
    python3 tests/py/memsup_sites_peak.py CHECK EVIDENCE_DIR HEAP_PEAK
with HEAP_PEAK the record's heap_peak in bytes.  The check prints one line
of figures (the test logs it; it is what a failure shows too), then exits
non-zero with the assertion's message when:
  - resources.json's peak_heap_mb is not the record's heap_peak in decimal
    MB, or tree.heap_peak's traced_heap is not heap_peak in bytes;
  - CHECK "shares" (the default sampling interval): a site's estimated
    bytes in stacks.json's tree.heap_peak are further from its true bytes
    than 4.5 of its own standard errors (and a sample's rounding);
  - CHECK "exact" (every block sampled): a site's bytes there are not its
    true bytes, or the sites do not add up to heap_peak.
Standard library only.
"""
import json, os, re, sys

check, d, heap_peak = sys.argv[1], sys.argv[2], int(sys.argv[3])
st = json.load(open(os.path.join(d, 'stacks.json')))
R = json.load(open(os.path.join(d, 'resources.json')))
m = re.search(r'pid=(\d+) half=(\d+) three_tenths=(\d+) fifth=(\d+)',
              open(os.path.join(d, 'stdout.log')).read())
assert m, 'sites_532 did not print its truth'
FNS = ['site_half', 'site_three_tenths', 'site_fifth']
truth = dict(zip(FNS, (int(m.group(k)) for k in (2, 3, 4))))
t = st['tree']['heap_peak']
assert t is not None, 'no tree heap peak in stacks.json'
frames = st['frames']
got = {}
for s in t['sites']:
    fn = frames[s['frames'][0]]['function'] if s['frames'] else None
    got[fn] = got.get(fn, 0) + s['bytes']
est = t['estimated_bytes']
share = {f: 100.0 * got.get(f, 0) / est if est else 0.0 for f in FNS}
want = {f: 100.0 * truth[f] / sum(truth.values()) for f in FNS}
print('shares %.1f/%.1f/%.1f%% (true %.1f/%.1f/%.1f); peak_heap_mb %r, heap_peak %d B, '
      'traced_heap %d B, at %.3f s' % (share['site_half'], share['site_three_tenths'],
      share['site_fifth'], want['site_half'], want['site_three_tenths'], want['site_fifth'],
      R['peak_heap_mb'], heap_peak, t['traced_heap'], t['at_s']))
assert R['peak_heap_mb'] == heap_peak / 1e6, (R['peak_heap_mb'], heap_peak)
assert t['traced_heap'] == heap_peak, (t['traced_heap'], heap_peak)
if check == 'shares':
    # each site's estimate against its true bytes, by its own standard
    # error (stacks.json's se_bytes: from the blocks the sampler drew), not
    # by a fixed number of points: 4.5 SE fails a right estimate about once
    # in 150,000 sites, and one sample's worth of rounding beside it
    for f in FNS:
        se = sum(s['se_bytes'] ** 2 for s in t['sites'] if s['frames'] and
                 frames[s['frames'][0]]['function'] == f) ** 0.5
        bound = 4.5 * se + st['sample_bytes']
        assert abs(got.get(f, 0) - truth[f]) <= bound, (
            '%s: %d B at the tree heap peak, true %d B: %.1f SE off (SE %d B; %.1f%% of the '
            'estimate, true %.1f%%)' % (f, got.get(f, 0), truth[f],
                                        abs(got.get(f, 0) - truth[f]) / se if se else float('inf'),
                                        se, share[f], want[f]))
elif check == 'exact':
    assert st['sample_bytes'] == 1 and t['se_bytes'] == 0, (st['sample_bytes'], t['se_bytes'])
    for f in FNS:
        assert got.get(f) == truth[f], (f, got.get(f), truth[f])
    assert est == heap_peak, (est, heap_peak)
else:
    raise SystemExit('unknown check ' + check)
