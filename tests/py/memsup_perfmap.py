"""memsup_perfmap.py: the checks of tests/e2e/test_memsup_perfmap.c.

    python3 tests/py/memsup_perfmap.py CHECK EVIDENCE_DIR

The run is tests/progs/jit_sites 20 with every block sampled: 20 MB
malloc'd by jit_target(), called from generated code that the program
named "jit_alloc_fn" in /tmp/perf-PID.map (after a line naming the same
address "jit_old_name").  Removes the map once read.  Standard library
only.

The node checks (js_*): `node --perf-basic-prof
--interpreted-frames-native-stack shares.js`, described below.
"""
import json, os, re, sys
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402

CHECK, d = sys.argv[1], sys.argv[2]
st = json.load(open(os.path.join(d, 'stacks.json')))
procs = memsup.read_processes(d)
frames, modules = st['frames'], st['modules']
pid = procs[0]['pid']
mapfile = '/tmp/perf-%d.map' % pid
try:
    os.unlink(mapfile)
except FileNotFoundError:
    pass


def jit_sites_frames():
    site = max(st['tree']['heap_peak']['sites'], key=lambda s: s['bytes'])
    assert 19.9e6 <= site['bytes'] <= 20.1e6, site
    fs = [frames[i] for i in site['frames']]
    assert fs[0]['function'] == 'jit_target', fs
    print('frames:', [(f['function'], f.get('module')) for f in fs])
    return fs


def named_by_the_perf_map():
    jit = jit_sites_frames()[1]
    # the later line for the address wins, as perf takes it
    assert jit['function'] == 'jit_alloc_fn', jit
    m = modules[jit['module']]
    assert m['path'] == mapfile, m
    assert jit['file'] is None and jit['line'] is None, jit
    # the flame graph and the summary name it too
    folded = open(os.path.join(d, 'flame.folded')).read()
    assert 'jit_alloc_fn;jit_target' in folded, folded


def stale_map_names_nothing():
    jit = jit_sites_frames()[1]
    # a map older than the process is another process's of the same pid
    assert jit['function'] is None and jit.get('module') is None, jit
    assert not any(m['path'] == mapfile for m in modules), modules


# ---- node --perf-basic-prof (test_memsup_perfmap.c, memsup_nodeframes) ----
#
# The script's functions alpha, beta and gamma keep 150, 90 and 60 buffers
# of 1 MiB (Buffer.allocUnsafeSlow: one malloc of 1 MiB each in node's
# ArrayBuffer allocator, never touched) alive to the end: 50/30/20% of the 300 MiB the
# three hold.  V8 names its JavaScript functions in the perf map with a
# kind and a tier mark (~ interpreted, ^ baseline, + Maglev, * TurboFan):
# "JS:" in node 20's V8, "Function:" or "LazyCompile:" in node 18's
# (Debian bookworm's).
JS_NAMES = ('alpha', 'beta', 'gamma')
JS_TRUTH = {'alpha': 0.5, 'beta': 0.3, 'gamma': 0.2}
MIB = 1 << 20


JS_TAG = r'(?:JS|Function|LazyCompile):[~^+*]?'


def js_function(name):
    return re.compile(r'^%s%s ' % (JS_TAG, name))


def native(f):
    # a frame in a mapped file (not generated code, not Python's)
    m = f.get('module')
    return m is not None and modules[m]['path'] != mapfile


def node_shares(tolerance):
    sites = st['tree']['heap_peak']['sites']
    held = dict.fromkeys(JS_NAMES, 0.0)
    whole = dict.fromkeys(JS_NAMES, 0)  # its sites that reach V8's entry
    seen = 0
    for s in sites:
        fs = [frames[i] for i in s['frames']]
        names = [f['function'] or '' for f in fs]
        hit = [n for n in JS_NAMES if any(js_function(n).match(x) for x in names)]
        if not hit:
            continue
        assert len(hit) == 1, (hit, names)
        held[hit[0]] += s['bytes']
        seen += 1
        # Outward of the JavaScript frame (stacks are innermost first):
        # native frames, V8's entry from C++ (Builtins_JSEntry, Invoke,
        # Execution::Call) and on to node's main, unless the stack was cut
        # at MT_STACKS_FRAMES (32: these are 30 to 32 deep with node 20).
        # Inward of it native code (V8's C++ entry builtin and node 20's
        # Buffer binding; node 18 allocates in V8's typed array code; an
        # mmap site is V8's own heap, grown by a collection the allocation
        # started).  Names are checked where the modules have symbols
        # (node 20's binary has; a distribution's libnode may keep only
        # its exported ones).
        at = next(i for i, x in enumerate(names) if js_function(hit[0]).match(x))
        outer, inner = names[at + 1:], names[:at]
        outer_native = [x for f, x in zip(fs[at + 1:], outer) if native(f)]
        assert any(native(f) for f in fs[:at]), names
        named = [x for x in outer_native if x]
        if len(outer_native) >= 3 and (not named or any(
                x == 'Builtins_JSEntry' or x.startswith('v8::internal::Execution::Call(')
                for x in named)):
            whole[hit[0]] += 1
        if len(names) < 32:
            assert native(fs[-1]) and len(outer_native) >= 3, names
            assert not named or any(x.startswith(('node::Start(', 'main', '__libc_start'))
                                    for x in named), names
        # V8's C++ builtin is entered from its CEntry builtin: named so
        # where the module has that symbol, else no name at all (never the
        # name of a function that ends before it)
        for i, x in enumerate(inner):
            if x.startswith('v8::internal::Builtin_') and i + 1 < len(inner):
                assert inner[i + 1].startswith('Builtins_CEntry') or not inner[i + 1], names
        fm = modules[fs[at]['module']]
        assert fm['path'] == mapfile, fm
    total = sum(held.values())
    print('the three functions hold %.1f MB in %d sites: %s' % (
        total / 1e6, seen, ', '.join('%s %.1f%%' % (n, 100 * held[n] / total)
                                     for n in JS_NAMES if total)))
    assert total > 0, 'no site names a JavaScript function: %s' % [
        [frames[i]['function'] for i in s['frames']] for s in sites[:3]]
    # the estimate of the whole: 300 MiB, within 4 standard errors
    se = st['tree']['heap_peak']['se_bytes']
    assert abs(total - 300 * MIB) <= 4 * se + 0.01 * 300 * MIB, (total, se)
    for n in JS_NAMES:
        share = held[n] / total
        assert abs(share - JS_TRUTH[n]) <= tolerance, (n, share, JS_TRUTH[n])
    folded = open(os.path.join(d, 'flame.folded')).read()
    svg = open(os.path.join(d, 'flame.svg')).read()
    for n in JS_NAMES:
        # in the folded lines, outermost first: frames before the
        # JavaScript function (the C++ that called into it) and after it
        assert whole[n], (n, 'no stack reaches the C++ that called JavaScript')
        assert re.search(r'^pid [^;\n]*;[^\n]+;%s%s [^;\n]*;[^\n]+ \d+$' % (JS_TAG, n),
                         folded, re.M), n
        assert re.search(r'%s%s ' % (JS_TAG, n), svg), n


def js_shares_at_the_default_interval():
    node_shares(0.05)


def js_shares_exact_with_every_buffer_sampled():
    node_shares(0.005)


globals()[CHECK]()
