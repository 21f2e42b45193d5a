"""memsup_merge.py: the checks of tests/e2e/test_memsup_merge.c.

Each test there runs memsup with the shim (the merged view) on a workload
of known shape and heap (tests/progs/merge_tree.c, merge_static.c) and then
    python3 tests/py/memsup_merge.py CHECK EVIDENCE_DIR
where CHECK names one of the functions below (the test's own name).  The
module loads P (processes.json), R (resources.json) and T (the lines of
timeline.jsonl) with the json module (a real parser, not memsup's); the
check asserts lineage, heap peaks, statuses and notes, and exits non-zero
with the assertion's message when one does not hold.  A heap peak of a
block of N bytes must lie in [N, N + 64 KiB] (heap_ok; the C file's header
says why).  Standard library and scripts/memsup.py.
"""
import json, os, sys
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402

CHECK = sys.argv.pop(1)  # the rest as before: argv[1] the evidence
D = sys.argv[1]
P = memsup.read_processes(D)
R = json.load(open(D + '/resources.json'))
T = [json.loads(l) for l in open(D + '/timeline.jsonl')]
def img(pid, gen):
    m = [p for p in P if p['pid'] == pid and p['gen'] == gen]
    assert len(m) == 1, 'no single image %d.%d in %s' % (pid, gen, P)
    return m[0]
def heap_ok(p, n):
    h = p['record']['heap']['peak']
    assert n <= h <= n + 65536, 'heap peak %d of %s not in [%d, +64KiB]' % (h, p['argv'], n)



def record_json_is_the_shims_own():
    shim_dir = sys.argv[2]
    identity = ('version', 'pid', 'ppid', 'gen', 'relation', 'parent_pid',
                'parent_gen', 'exe', 'argv', 'argc')
    ended = [p for p in P if p['record'] and p['record']['state'] == 'exited']
    assert len(ended) == 3, [(p['pid'], p['gen'], p['record'] and p['record']['state']) for p in P]
    for p in ended:
        path = '%s/shim.%d.json' % (shim_dir, p['pid'])
        shim = json.load(open(path))
        figures = {k: v for k, v in shim.items() if k not in identity}
        assert p['record'] == figures, (path, p['record'], figures)
        assert (shim['pid'], shim['gen'], shim['ppid']) == (p['pid'], p['gen'], p['ppid']), (shim, p)
        assert shim['argv'] == p['argv'] and shim['exe'] == p['exe'], (shim, p)
        assert shim['relation'] == p['lineage']['relation'], (shim, p['lineage'])
        # the histogram stops at its last non-empty bucket, and it holds
        # the image's one block of 20, 30 or 40 MB (bucket 25 or 26)
        hist = shim['heap']['hist']
        assert hist and hist[-1] > 0 and len(hist) <= 64, hist
        assert len(hist) - 1 in (25, 26), hist
        # the image's life in run seconds beside the record, on its clock
        launch = [q['record']['start_mono_ns'] - q['start_s'] * 1e9 for q in ended]
        assert max(launch) - min(launch) < 2e3, launch
        assert p['start_s'] <= p['end_s'], p


def tree_lineage_heaps_and_timeline():
    assert R['traced'] is True and R['exit_code'] == 0
    assert os.path.isdir(D + '/records')
    assert len(P) == 4, [(p['pid'], p['gen'], p['argv']) for p in P]
    assert all(p['traced'] and p['record_error'] is None for p in P)
    assert R['processes_traced'] == 4
    root = img(R['pid'], 0)
    assert root['lineage']['relation'] == 'root' and root['argv'][1] == 'tree'
    assert root['sampled'] and root['exit_code'] == 0
    heap_ok(root, 20000000)
    kids = [p for p in P if p['pid'] != root['pid']]
    a = [p for p in kids if p['record']['state'] == 'exited' and p['gen'] == 0]
    assert len(a) == 1, kids
    a = a[0]
    assert a['lineage'] == {'relation': 'fork', 'parent_pid': root['pid'], 'parent_gen': 0, 'guessed': False}, a['lineage']
    heap_ok(a, 30000000)
    assert a['sampled'] and a['polled_peak_rss'] >= 30000000 and a['exit_code'] == 0
    b1 = [p for p in kids if p['gen'] == 1]
    assert len(b1) == 1
    b1 = b1[0]
    b0 = img(b1['pid'], 0)
    assert b0['lineage']['relation'] == 'fork' and b0['lineage']['parent_pid'] == root['pid']
    assert b0['record']['state'] == 'execed'
    assert b1['lineage'] == {'relation': 'exec', 'parent_pid': b1['pid'], 'parent_gen': 0, 'guessed': False}
    assert b1['argv'][1:] == ['leaf', '40', '400', '3'], b1['argv']
    heap_ok(b1, 40000000)
    assert b1['record']['heap']['current'] < 65536, 'the leaf frees its block'
    assert b1['exit_code'] == 3 and b1['sampled']
    assert b1['polled_peak_rss'] >= 40000000
    assert b1['vm_hwm_from'] == 'shim' and b1['vm_hwm_kb'] * 1024 >= 40000000
    assert b1['record']['heap']['largest_request'] == 40000000
    assert b1['record']['calls']['malloc'] >= 1 and b1['record']['calls']['free'] >= 1
    # the timeline: one line per sample, the three blocks live at once
    assert len(T) == R['samples']
    for l in T:
        assert set(['t', 'rss', 'processes', 'heap', 'mapped_anon', 'mapped_file']) <= set(l), l
    hmax = max(l['heap'] for l in T)
    assert 90000000 <= hmax <= 90000000 + 3 * 65536, hmax
    assert any('pss' in l for l in T)
    assert max(l['rss'] for l in T) / 1e6 == R['peak_tree_rss_mb']
    # the peak sample, broken down
    assert 90.0 <= R['peak_heap_mb'] <= 90.2, R['peak_heap_mb']
    assert R['peak_pss_mb'] is not None and R['peak_pss_mb'] >= 75, R['peak_pss_mb']
    for p, n in ((root, 20e6), (a, 30e6), (b1, 40e6)):
        assert p['at_peak'] and p['at_peak']['heap'] >= n and p['at_peak']['rss'] >= n, p
    assert isinstance(R['blind_spots'], list)


def user_preload_kept_and_shim_appended():
    assert len(P) == 1 and P[0]['traced'], P
    heap_ok(P[0], 5000000 + 4096)
    assert P[0]['record']['calls']['malloc'] >= 3, P[0]['record']['calls']
    assert R['env']['LD_PRELOAD'].endswith('libshimctor.so')


def no_trace_polls_alone():
    assert not os.path.exists(D + '/records')
    assert R['traced'] is False and R['processes_traced'] == 0
    assert R['processes_sampled'] >= 3, R['processes_sampled']
    assert R['peak_heap_mb'] is None and R['peak_mapped_mb'] is None
    assert len(P) >= 3
    for p in P:
        assert not p['traced'] and p['record'] is None
        assert p['untraced_why'] == 'not_requested', p
    assert all(l['heap'] is None for l in T)
    assert any(p['argv'][1:2] == ['tree'] for p in P)


def static_binary_is_untraced():
    assert R['traced'] is True and R['processes_traced'] == 0
    assert len(P) == 1, P
    p = P[0]
    assert p['pid'] == R['pid'] and not p['traced'] and p['sampled']
    assert p['untraced_why'] == 'static', p['untraced_why']
    assert p['polled_peak_rss'] >= 20000000
    assert p['argv'][1:] == ['20', '400'], p['argv']
    assert p['exit_code'] == 0


def scrubbed_env_exec_is_next_image():
    e = img(R['pid'], 0)
    assert e['traced'] and e['record']['state'] == 'execed', e
    h = img(R['pid'], 1)
    assert not h['traced'] and h['sampled'], h
    assert h['untraced_why'] == 'no_preload', h['untraced_why']
    assert h['argv'][1:] == ['hold', '10', '400'], h['argv']
    assert h['lineage']['relation'] == 'exec' and h['lineage']['parent_gen'] == 0
    assert h['polled_peak_rss'] >= 10000000
    assert h['exit_code'] == 0
    assert len(P) == 2


def sigkilled_record_still_read():
    assert len(P) == 1 and P[0]['traced'], P
    p = P[0]
    assert p['record']['state'] == 'running'
    heap_ok(p, 30000000)
    assert p['record']['heap']['current'] >= 30000000
    assert p['exit_code'] == -9


def unsampled_child_is_traced():
    assert len(P) == 2, P
    root = img(R['pid'], 0)
    assert root['sampled'] and root['traced']
    c = [p for p in P if p is not root][0]
    assert c['traced'] and not c['sampled'] and c['samples'] == 0
    assert c['polled_peak_rss'] is None and c['first_seen_s'] is None
    heap_ok(c, 1000000)
    assert c['lineage']['relation'] == 'fork' and c['lineage']['parent_pid'] == root['pid']
    assert R['processes_traced'] == 2 and R['processes_sampled'] == 1


def missing_shim_is_a_note():
    assert R['traced'] is False
    assert any('libmemtrace.so was not found (memsup looked beside itself in' in n
               and 'not traced' in n for n in R['notes']), R['notes']
    assert not os.path.exists(D + '/records')
    # no shim is not --no-trace: neither the image nor the finding says so
    assert len(P) == 1 and P[0]['untraced_why'] == 'no_shim', P
    u = [b for b in R['blind_spots'] if b['kind'] == 'untraced']
    assert u and u[0]['untraced_why'] == 'no_shim', u
    assert '--no-trace' not in u[0]['sentence'] and 'not found' in u[0]['sentence'], u


def setuid_program_is_secure():
    assert len(P) == 1, P
    p = P[0]
    if p['traced']:
        raise SystemExit('secure mode did not apply (nosuid mount?): traced')
    assert p['sampled'] and p['untraced_why'] == 'secure', p['untraced_why']
    assert p['polled_peak_rss'] >= 10000000


globals()[CHECK]()
