"""memsup_refusals.py: the checks of tests/e2e/test_memsup_refusals.c.

    python3 tests/py/memsup_refusals.py CHECK EVIDENCE_DIR [ARG]

CHECK names one of the functions below (the test's own name).  The check
loads resources.json with the json module (a real parser, not memsup's)
and processes.json through memsup.read_processes (which puts back the keys
memsup leaves out at their defaults), and exits non-zero with the
assertion's message when one does not hold.  Standard library only.
"""
import json, os, sys

sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402

CHECK = sys.argv.pop(1)
D = sys.argv[1]
ARG = sys.argv[2] if len(sys.argv) > 2 else ''
R = json.load(open(os.path.join(D, 'resources.json')))
P = memsup.read_processes(D)


def kinds():
    return [f['kind'] for f in R['blind_spots']]


def name(p):
    return os.path.basename(p['argv'][0]) if p['argv'] else ''


def mv_records_start_before_their_peaks():
    want = int(ARG)
    nb = R['records_not_believed']
    assert 'implausible_record' not in kinds(), nb[:3]
    assert not nb, nb[:3]
    mvs = [p for p in P if name(p) == 'mv']
    assert len(mvs) == want, '%d mv images, not %d' % (len(mvs), want)
    untraced = [(p['pid'], p['gen'], p['untraced_why']) for p in mvs if not p['traced']]
    assert not untraced, untraced[:5]
    # every record's peak times lie in its life, to the nanosecond: the
    # images' own clock, no slack
    for p in mvs:
        rec = p['record']
        start = rec['start_mono_ns']
        for part in ('heap', 'total'):
            t = rec[part]['peak_mono_ns']
            assert not t or t >= start, '%d.%d: %s peak at %d ns, %d ns before its start' % (
                p['pid'], p['gen'], part, t, start - t)


def a_command_that_drops_to_another_user_is_said_so():
    uid = int(ARG)
    py = [p for p in P if name(p).startswith('python3')]
    assert len(py) == 1, [(p['pid'], p['gen'], p['argv']) for p in P]
    p = py[0]
    assert not p['traced'], p
    assert p['untraced_why'] == 'other_user', p['untraced_why']
    assert p['polled_peak_rss'] >= 30e6, p['polled_peak_rss']
    f = [f for f in R['blind_spots'] if f['kind'] == 'untraced']
    assert len(f) == 1, kinds()
    f = f[0]
    assert f['other_user_count'] == 1 and f['unknown_count'] == 0, f
    assert ('1 that changed its user to uid %d, who may not write the run\'s records '
            'directory' % uid) in f['sentence'], f['sentence']
    assert 'could not tell' not in f['sentence'], f['sentence']


def a_pid_namespace_is_named_not_called_outside():
    # python3, the one holding 30 MB: named python3, or sh -c when the
    # polls saw sh's fork child only before its exec (an untraced image
    # keeps the name it was first seen with)
    py = [p for p in P if p['polled_peak_rss'] >= 30e6]
    assert len(py) == 1, [(p['pid'], p['gen'], p['argv'], p['polled_peak_rss']) for p in P]
    p = py[0]
    assert name(p) in ('python3', 'sh'), p['argv']
    nb = R['records_not_believed']
    assert not [a for a in nb if 'outside the tree' in a['why']], nb
    # python3 is pid 2 of the namespace (sh is 1): its record is named so
    mine = [a for a in nb if a['file'] == '2.0.mtr']
    assert len(mine) == 1, nb
    assert mine[0]['why'] == ("pid 2 is the tree's process %d in its own PID namespace, "
                              "where the shim names its record by that pid; memsup, in "
                              "another, cannot join such a record to its process"
                              % p['pid']), mine
    assert not p['traced'] and p['untraced_why'] == 'pid_namespace', p['untraced_why']
    f = [f for f in R['blind_spots'] if f['kind'] == 'untraced']
    assert len(f) == 1 and f[0]['pid_namespace_count'] >= 1, f
    assert f[0]['unknown_count'] == 0, f[0]['sentence']


globals()[CHECK]()
