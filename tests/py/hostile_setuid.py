"""hostile_setuid.py: run by tests/e2e/test_memsup_hostile.c
(setuid_target_is_polled_and_classified_secure).

    python3 tests/py/hostile_setuid.py EVIDENCE_DIR COPY

COPY, a setuid copy of x_argdump, ran without the shim (the loader drops
LD_PRELOAD in secure-execution mode): processes.json has it untraced,
"secure", polled, exit 0, and resources.json's blind spots hold one
"untraced" finding that says setuid.  Standard library and scripts/memsup.py.
"""
import json, sys, os
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402
ev, copy = sys.argv[1:3]
procs = memsup.read_processes(ev)
p = [p for p in procs if p['exe'] == copy]
assert len(p) == 1, procs
p = p[0]
assert not p['traced'] and p['untraced_why'] == 'secure', p
assert p['sampled'] and p['polled_peak_rss'] >= 1 << 20, p
assert p['exit_code'] == 0, p
r = json.load(open(ev + '/resources.json'))
assert r['exit_code'] == 0 and r['peak_tree_rss_mb'] >= 1.0, r
u = [b for b in r['blind_spots'] if b['kind'] == 'untraced']
assert len(u) == 1, r['blind_spots']
assert 'setuid' in json.dumps(u[0]), u
