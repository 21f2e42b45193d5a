"""memsup_answersites.py: the checks of tests/e2e/test_memsup_answersites.c.

    python3 tests/py/memsup_answersites.py CHECK EVIDENCE_DIR STDERR_FILE

CHECK names one of the functions below (the test's own name).  The
program's stdout line (kept in stdout.log) is the truth; STDERR_FILE holds
memsup's stderr, whose summary names the sites.  stacks.json is read with
the json module.  The tree's moment is tree.total_peak (a stacks.json
without one is judged at its heap peak, as memsup drew it then).  Every
estimate is bounded by its own standard error: 4 of them.  A check exits
non-zero with the assertion's message when the sites disagree with the
truth; what it prints the test logs.  Standard library only.
"""
import json, math, os, re, sys

CHECK = sys.argv.pop(1)
d, errfile = sys.argv[1], sys.argv[2]
st = json.load(open(os.path.join(d, 'stacks.json')))
frames = st['frames']
err = open(errfile).read()
MB = 1e6


def tree():
    t = st['tree'].get('total_peak') or st['tree']['heap_peak']
    assert t, st['tree']
    return t


def site_fn(s):
    return frames[s['frames'][0]]['function'] if s['frames'] else None


def by_fn(sites):
    """Bytes and variance by the innermost frame's function."""
    out = {}
    for s in sites:
        b, v = out.get(site_fn(s), (0, 0.0))
        out[site_fn(s)] = (b + s['bytes'], v + float(s['se_bytes']) ** 2)
    return out


def summary_lines():
    """The summary's site lines: (percent, MB, text)."""
    return [(float(m.group(1)), float(m.group(2)), m.group(3)) for m in
            re.finditer(r'^memsup: +([0-9.]+)% +([0-9.]+)  (pid \d+: .*)$', err, re.M)]


def folded_total(path):
    return sum(int(l.rsplit(' ', 1)[1]) for l in open(path) if l.strip())


def mmap_only_program_by_default():
    m = re.search(r'pid=(\d+) half=(\d+) third=(\d+) sixth=(\d+)',
                  open(os.path.join(d, 'stdout.log')).read())
    assert m, 'no truth line in stdout.log'
    pid = int(m.group(1))
    truth = {'map_half': int(m.group(2)), 'map_third': int(m.group(3)),
             'map_sixth': int(m.group(4))}
    everything = sum(truth.values())
    t = tree()
    own = [s for s in t['sites'] if not s.get('inherited')]
    got = by_fn([s for s in own if s['pid'] == pid and s['kind'] == 'mmap'])
    est = sum(b for b, _ in got.values())
    print('tree at %.3f s: mmap sites est. %.1f MB +- %.1f MB of %.1f MB traced; true %.1f MB' %
          (t['at_s'], est / MB, t['se_bytes'] / MB,
           t.get('traced_total', t.get('traced_heap', 0)) / MB, everything / MB))
    for f, want in sorted(truth.items()):
        b, var = got.get(f, (0, 0.0))
        se = math.sqrt(var)
        print('  %s: est. %.1f MB +- %.1f MB (%.1f%%), true %.1f MB (%.1f%%)' %
              (f, b / MB, se / MB, 100.0 * b / est if est else 0, want / MB,
               100.0 * want / everything))
        assert f in got, ('no site of %s at the tree\'s moment' % f, sorted(got))
        assert abs(b - want) <= 4 * se, (f, b, want, se)
    assert abs(est - everything) <= 4 * t['se_bytes'], (est, everything, t['se_bytes'])
    # the sites estimate what the tree held then: not above its heap and
    # mappings, beyond their error
    assert t['estimated_bytes'] <= t['traced_total'] + 4 * t['se_bytes'], t
    # the summary names the three, and their lines add up to its estimate
    lines = summary_lines()
    named = {f for f in truth for _, _, text in lines if ('] %s (' % f) in text}
    assert named == set(truth), (named, err)
    # flame.svg and flame.folded draw them
    svg = open(os.path.join(d, 'flame.svg')).read()
    assert all(f in svg for f in truth), 'flame.svg names not all three'
    folded = open(os.path.join(d, 'flame.folded')).read()
    assert all(f in folded for f in truth), folded
    drawn = folded_total(os.path.join(d, 'flame.folded'))
    assert abs(drawn - est) <= 4 * t['se_bytes'] + 0.02 * est, (drawn, est)


def fork_truth():
    m = re.search(r'pid=(\d+) parent=(\d+) child=(\d+) children=(\d+) freed=(\d)',
                  open(os.path.join(d, 'stdout.log')).read())
    assert m, 'no truth line in stdout.log'
    return tuple(int(x) for x in m.groups())


def fork_children_inherited_once():
    ppid, parent, child, k, freed = fork_truth()
    assert not freed
    own_total = parent + k * child
    t = tree()
    own = [s for s in t['sites'] if not s.get('inherited')]
    inh = [s for s in t['sites'] if s.get('inherited')]
    est = sum(s['bytes'] for s in own)
    inh_est = sum(s['bytes'] for s in inh)
    print('tree at %.3f s: est. %.1f MB +- %.1f MB (the tree\'s own: %.1f MB); '
          'marked inherited est. %.1f MB (the children hold %.1f MB of the parent\'s)' %
          (t['at_s'], est / MB, t['se_bytes'] / MB, own_total / MB, inh_est / MB,
           k * parent / MB))
    assert est == t['estimated_bytes'], (est, t['estimated_bytes'])
    # the tree's own, not once more per child; 1 MB for what the C library
    # holds besides the blocks the truth counts
    assert abs(est - own_total) <= 4 * t['se_bytes'] + 1 * MB, (est, own_total, t['se_bytes'])
    # the children's copies of parent_hold's blocks, marked, and nothing else
    assert inh, 'no site marked inherited'
    assert {site_fn(s) for s in inh} == {'parent_hold'}, [site_fn(s) for s in inh]
    assert all(s['pid'] != ppid for s in inh), inh
    assert len({s['pid'] for s in inh}) == k, inh
    assert t['inherited_bytes'] == inh_est, t
    # each child's marked copy is what the parent holds at that site
    parent_own = sum(s['bytes'] for s in own if s['pid'] == ppid and
                     site_fn(s) == 'parent_hold')
    for s in inh:
        assert s['bytes'] <= parent_own, (s, parent_own)
    by = by_fn(own)
    for f, want in (('parent_hold', parent), ('child_hold', k * child)):
        b, var = by.get(f, (0, 0.0))
        se = math.sqrt(var)
        print('  %s: est. %.1f MB +- %.1f MB, true %.1f MB' % (f, b / MB, se / MB, want / MB))
        assert abs(b - want) <= 4 * se + 1 * MB, (f, b, want, se)
    # the summary's lines and flame.folded add up to the tree's own
    lines = summary_lines()
    assert lines, err
    assert sum(mb for _, mb, _ in lines) * MB <= own_total + 4 * t['se_bytes'] + 1 * MB + \
        0.05 * MB * len(lines), (lines, own_total)
    assert not any('parent_hold' in text and ('pid %d:' % ppid) not in text
                   for _, _, text in lines), lines
    drawn = folded_total(os.path.join(d, 'flame.folded'))
    print('flame.folded: %.1f MB' % (drawn / MB))
    assert drawn <= own_total + 4 * t['se_bytes'] + 1 * MB, (drawn, own_total)


def fork_parent_freed_siblings_share():
    ppid, parent, child, k, freed = fork_truth()
    assert freed
    own_total = parent + k * child
    t = tree()
    own = [s for s in t['sites'] if not s.get('inherited')]
    inh = [s for s in t['sites'] if s.get('inherited')]
    est = sum(s['bytes'] for s in own)
    print('tree at %.3f s: est. %.1f MB +- %.1f MB (the tree\'s own: %.1f MB); '
          'marked inherited est. %.1f MB (the children share %.1f MB)' %
          (t['at_s'], est / MB, t['se_bytes'] / MB, own_total / MB,
           sum(s['bytes'] for s in inh) / MB, parent / MB))
    assert abs(est - own_total) <= 4 * t['se_bytes'] + 1 * MB, (est, own_total, t['se_bytes'])
    # the parent holds none of them: one child counts them, the others'
    # copies are marked
    holders = sorted({s['pid'] for s in own if site_fn(s) == 'parent_hold'})
    assert ppid not in holders, holders
    assert len(holders) == 1, ('one child keeps the shared blocks', holders)
    assert {site_fn(s) for s in inh} == {'parent_hold'}, inh
    assert len({s['pid'] for s in inh}) == k - 1, inh
    assert holders[0] not in {s['pid'] for s in inh}, (holders, inh)
    drawn = folded_total(os.path.join(d, 'flame.folded'))
    print('flame.folded: %.1f MB' % (drawn / MB))
    assert drawn <= own_total + 4 * t['se_bytes'] + 1 * MB, (drawn, own_total)


globals()[CHECK]()
