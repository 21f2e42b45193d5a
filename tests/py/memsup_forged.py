"""memsup_forged.py: the checks of tests/e2e/test_memsup_forged.c.

    python3 tests/py/memsup_forged.py CHECK EVIDENCE_DIR MEMSUP OUTSIDER ABOVE N

CHECK names one of the functions below (the test's own name); OUTSIDER is
the pid of the `sleep` outside the tree a forged record named, ABOVE the
first of N forged pids at or above pid_max (for the live member's check:
the member's pid, the gen of its forged record, and 0).  The check loads
resources.json and processes.json with the json module (a real parser,
not memsup's), runs `MEMSUP report EVIDENCE_DIR`, and exits non-zero with
the assertion's message when one does not hold.  Standard library and scripts/memsup.py.
"""
import json, os, subprocess, sys
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402

CHECK = sys.argv.pop(1)
D, MEMSUP = sys.argv[1], sys.argv[2]
OUTSIDER, ABOVE, N = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
R = json.load(open(os.path.join(D, 'resources.json')))
P = memsup.read_processes(D)
REPORT = subprocess.run([MEMSUP, 'report', D], stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, universal_newlines=True).stdout
FORGED = [OUTSIDER] + list(range(ABOVE, ABOVE + N))


def imgs():
    return [(p['pid'], p['gen'], p['argv']) for p in P]


def outside_pid_and_impossible_pids_not_believed():
    # no image, no figure of theirs anywhere
    pids = set(p['pid'] for p in P)
    assert not pids & set(FORGED), imgs()
    assert R['processes_traced'] == sum(1 for p in P if p['traced']), R['processes_traced']
    assert R['peak_heap_mb'] is None or R['peak_heap_mb'] < 60, R['peak_heap_mb']
    for f in R['blind_spots']:
        if f['kind'] == 'implausible_record':
            continue  # the list of the records not believed, by name
        text = json.dumps(f)
        for pid in FORGED:
            assert str(pid) not in text, 'finding %s names forged pid %d: %s' % (
                f['kind'], pid, text)
        assert '1073' not in text and '1024.0' not in text, text
    # the report: no forged pid in its table, no 1 GiB largest process
    assert '1024.0' not in REPORT and '1073.' not in REPORT, REPORT
    for line in REPORT.splitlines():
        if 'not believed' in line:
            continue
        for pid in FORGED:
            assert str(pid) not in line.split(), 'report names %d: %s' % (pid, line)
    nb = R['records_not_believed']
    # each forged file named once, with why, as never the tree's
    assert R['records_not_believed_total'] == len(nb), 'a list of %d cut' % len(nb)
    forged = [a for a in nb if a['pid'] in FORGED]
    assert sorted(a['pid'] for a in forged) == sorted(FORGED), nb
    for a in forged:
        assert a['file'] == '%d.0.mtr' % a['pid'], a
        assert not a['in_tree'], a
        if a['pid'] == OUTSIDER:
            assert 'outside the tree' in a['why'], a
        else:
            assert 'pid_max' in a['why'], a
    # every other one is an image of the tree whose figures memsup could not
    # believe (recordfile_plausible: a real record can trip it on a loaded
    # machine), never a real record the tree rule refused
    others = [a for a in nb if a['pid'] not in FORGED]
    assert all(a['in_tree'] for a in others), others
    # the real short children, which the poller misses, are all believed
    # through their lineage: 40 /bin/true images, each traced
    trues = [p for p in P if p['argv'] and p['argv'][0] == '/bin/true']
    assert len(trues) + len(others) >= 40 and len(trues) <= 40, imgs()
    assert all(p['traced'] and p['record_error'] is None
               for p in trues if p['pid'] not in [a['pid'] for a in others]), trues[:2]
    # (a shell may vfork or fork and exec: either way a child of its record)
    sh = [p for p in P if p['pid'] == R['pid'] and p['gen'] == 0]
    assert len(sh) == 1 and sh[0]['traced'], imgs()
    unseen = [p for p in trues if not p['sampled']]
    assert len(unseen) >= 20 - len(others), 'the poll saw most trues: %d unseen' % len(unseen)




def live_member_far_above_the_kernels_figures_not_believed():
    pid, gen = OUTSIDER, ABOVE
    me = [p for p in P if p['pid'] == pid and p['gen'] == gen]
    assert len(me) == 1, imgs()
    assert not me[0]['traced'], me[0]
    assert (me[0]['record_error'] or '').startswith('implausible record'), me[0]
    nb = [a for a in R['records_not_believed'] if a['file'] == '%d.%d.mtr' % (pid, gen)]
    assert len(nb) == 1 and nb[0]['in_tree'], R['records_not_believed']
    assert 'VmHWM' in nb[0]['why'] and 'kernel' in nb[0]['why'], nb[0]
    # the kernel's figures themselves: a few MB, far below the claim
    assert R['rusage_children_maxrss_mb'] < 100, R['rusage_children_maxrss_mb']
    largest = max(P, key=lambda p: p['vm_hwm_kb'] or 0)
    assert (largest['vm_hwm_kb'] or 0) < 100 * 1024, largest
    assert R['peak_heap_mb'] is None or R['peak_heap_mb'] < 100, R['peak_heap_mb']
    assert '2000.0' not in REPORT and '2048' not in REPORT and '1953' not in REPORT, REPORT
    for f in R['blind_spots']:
        if f['kind'] != 'implausible_record':
            assert '2000' not in json.dumps(f), f


globals()[CHECK]()
