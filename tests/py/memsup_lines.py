"""memsup_lines.py: the checks of tests/e2e/test_memsup_lines.c.

Each test there runs memsup, every block sampled, on tests/progs/lines_sites
(or a stripped copy of it), which holds five blocks from five call sites and
prints the truth on stdout (kept in stdout.log):
    site=NAME line=L bytes=B [caller=NAME caller_line=L]
L being the line of the allocating call (__LINE__ on that same line).  Then
    python3 tests/py/memsup_lines.py CHECK EVIDENCE_DIR [ARG]
where CHECK names one of the functions below (the test's own name).  It
reads stacks.json, flame.folded and memsup's stderr (ARG where a check
needs it) with the json module and exits non-zero with the assertion's
message when they disagree with the truth, 77 when the check cannot run
here (it says why).  Standard library only.
"""
import json, os, re, sys

CHECK = sys.argv[1]
d = sys.argv[2]
ARG = sys.argv[3] if len(sys.argv) > 3 else None
st = json.load(open(os.path.join(d, 'stacks.json')))
frames, modules = st['frames'], st['modules']
truth = {}
for m in re.finditer(r'site=(.+?) line=(\d+) bytes=(\d+)(?: caller=(\w+) caller_line=(\d+))?\n',
                     open(os.path.join(d, 'stdout.log')).read()):
    truth[m.group(1)] = {'line': int(m.group(2)), 'bytes': int(m.group(3)),
                         'caller': m.group(4),
                         'caller_line': int(m.group(5)) if m.group(5) else None}
assert len(truth) == (1 if CHECK.startswith('cxx_') else 5), truth
assert st['sample_bytes'] == 1, st['sample_bytes']
images = [i for i in st['images'] if i['error'] is None]
assert len(images) == 1, st['images']
SITES = images[0]['at_peak']['sites']


def site_of(fn):
    """The one site at the image's peak whose innermost frame is fn."""
    got = [s for s in SITES if s['frames'] and frames[s['frames'][0]]['function'] == fn]
    assert len(got) == 1, (fn, [[frames[i]['function'] for i in s['frames']] for s in SITES])
    return got[0]


def prog_module():
    ms = [m for m in modules if os.path.basename(m['path']).startswith('lines_sites')]
    assert len(ms) == 1, modules
    return ms[0]


def exact_lines(fns):
    for fn in fns:
        s, t = site_of(fn), truth[fn]
        f = frames[s['frames'][0]]
        print('%s: %s:%s (true line %d), %d bytes (true %d)' %
              (fn, f['file'], f['line'], t['line'], s['bytes'], t['bytes']))
        assert f['file'] and f['file'].endswith('/lines_sites.c'), f
        assert f['line'] == t['line'], (f, t)
        assert s['bytes'] == t['bytes'], (s, t)


def label(fn):
    return '%s (lines_sites.c:%d)' % (fn, truth[fn]['line'])


def exact_line_for_each_site():
    exact_lines(['site_big', 'site_mid', 'site_small', 'thread_alloc'])
    m = prog_module()
    assert m['debug'] == 'in_file' and m['lines'] == 'read' and not m['stripped'], m
    # the flame's boxes and the summary name the same lines
    folded = open(os.path.join(d, 'flame.folded')).read()
    for fn in ('site_big', 'site_mid', 'site_small'):
        assert ';' + label(fn) + ' ' in folded, (label(fn), folded)
    for l in folded.splitlines():  # parseable: "a;b;c BYTES"
        assert re.fullmatch(r'[^;\n]+(;[^;\n]+)* \d+', l), l
    svg = open(os.path.join(d, 'flame.svg')).read()
    assert label('site_big') in svg, 'flame.svg'
    err = open(ARG).read()
    assert 'pid %d: %s < main (lines_sites.c:' % (images[0]['pid'], label('site_big')) in err, err


def inlined_function_shows_both_frames():
    s, t = site_of('inl_alloc'), truth['inl_alloc']
    inner, outer = frames[s['frames'][0]], frames[s['frames'][1]]
    print('inl_alloc at line %s inlined=%s, then %s at line %s (true %d, %d)' %
          (inner['line'], inner['inlined'], outer['function'], outer['line'], t['line'],
           t['caller_line']))
    assert inner['inlined'] is True and inner['line'] == t['line'], inner
    assert outer['function'] == 'site_inl' and outer['inlined'] is False, outer
    assert outer['line'] == t['caller_line'], (outer, t)
    # one return address, two frames: the same address, the same module
    assert inner['offset'] == outer['offset'] and inner['module'] == outer['module'], (inner, outer)
    assert s['bytes'] == t['bytes'], s
    folded = open(os.path.join(d, 'flame.folded')).read()
    want = '%s;%s ' % ('site_inl (lines_sites.c:%d)' % t['caller_line'], label('inl_alloc'))
    assert want in folded, (want, folded)


def libc_frame_from_build_id_debug_file():
    libc = [m for m in modules if re.search(r'/libc\.so\.6$', m['path'])]
    assert len(libc) == 1, modules
    libc = libc[0]
    bid = libc['build_id']
    dbg = '/usr/lib/debug/.build-id/%s/%s.debug' % (bid[:2], bid[2:]) if bid else None
    if not dbg or not os.path.exists(dbg):
        print('SKIP: no %s (install libc6-dbg)' % dbg)
        sys.exit(77)
    s = site_of('thread_alloc')
    chain = [frames[i] for i in s['frames']]
    print(' < '.join('%s (%s:%s)' % (f['function'], f['file'], f['line']) for f in chain))
    st_ = [f for f in chain if f['function'] == 'start_thread']
    assert st_, chain
    f = st_[0]
    assert f['file'] and f['file'].endswith('/pthread_create.c') and f['line'] > 0, f
    assert modules[f['module']] is libc
    assert libc['debug'] == 'build_id' and libc['debug_file'] == dbg, libc
    assert libc['lines'] == 'read', libc


def stripped_copy_with_debuglink():
    exact_lines(['site_big', 'site_mid', 'site_small', 'thread_alloc'])
    m = prog_module()
    print(m)
    assert m['stripped'] is True and m['debug'] == 'debuglink', m
    assert m['debug_file'] == ARG and m['lines'] == 'read', (m, ARG)


def stripped_copy_without_debug_file():
    m = prog_module()
    print(m)
    assert m['stripped'] is True and m['debug'] == 'none' and m['lines'] == 'no_debug_info', m
    assert m['frames_unnamed'] > 0 and m['unnamed_why'] == 'stripped', m
    for f in frames:
        if f['module'] is not None and modules[f['module']] is m:
            assert f['file'] is None and f['line'] is None, f


def mismatched_debug_file_is_not_used():
    m = prog_module()
    print(m)
    assert m['debug'] == 'mismatch' and m['lines'] == 'debug_file_mismatch', m
    assert m['debug_file'] == ARG and m['unnamed_why'] == 'debug_file_mismatch', m


def without_addr2line_names_stay_functions():
    m = prog_module()
    print(m)
    assert m['lines'] == 'no_addr2line' and m['unnamed_why'] == 'no_addr2line', m
    for fn in ('site_big', 'site_mid', 'site_small', 'thread_alloc'):
        f = frames[site_of(fn)['frames'][0]]
        assert f['file'] is None and f['line'] is None and not f['inlined'], f
    # no inlined expansion either: the inlined site is its caller's frame
    site_of('site_inl')
    folded = open(os.path.join(d, 'flame.folded')).read()
    assert ';site_big ' in folded, folded


def cxx_names_are_demangled():
    fn = 'store::Pool<int>::grow(unsigned long)'
    t = truth[fn]
    s = site_of('operator new(unsigned long)')
    new, grow = frames[s['frames'][0]], frames[s['frames'][1]]
    print(new, grow, t)
    # operator new from libstdc++ without its DWARF: demangled all the same
    assert modules[new['module']]['path'].split('/')[-1].startswith('libstdc++'), new
    assert grow['function'] == fn, grow
    assert grow['file'].endswith('/lines_cxx.cc') and grow['line'] == t['line'], (grow, t)
    assert s['bytes'] == t['bytes'], (s, t)
    folded = open(os.path.join(d, 'flame.folded')).read()
    assert ';%s (lines_cxx.cc:%d);operator new(unsigned long) ' % (fn, t['line']) in folded, folded


def cxx_stripped_names_only_what_symbols_hold():
    fn = 'store::Pool<int>::grow(unsigned long)'
    t = truth[fn]
    s = site_of('operator new(unsigned long)')
    grow, fill, main = (frames[i] for i in s['frames'][1:4])
    print(grow, fill, main)
    assert modules[grow['module']]['path'].endswith('/lines_cxx'), grow
    assert grow['function'] == fn and not grow.get('file'), grow
    # fill has no symbol: no name, rather than a neighbour's
    assert fill['module'] == grow['module'] and fill['function'] is None, fill
    assert main['function'] == 'main', main
    assert s['bytes'] == t['bytes'], (s, t)


globals()[CHECK]()
