"""plot_legend.py: run by tests/unit/test_plot.c (end_to_end_bands_of_demo_tree).

    python3 tests/py/plot_legend.py EVIDENCE_DIR

The legend of EVIDENCE_DIR/timeline.svg names each process of
processes.json ("pid N demo_tree"), has no "other processes", and there
are five band paths.  Standard library and scripts/memsup.py.
"""
import sys,json,re,xml.etree.ElementTree as E, os
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402
D=sys.argv[1]; ns='{http://www.w3.org/2000/svg}'
r=E.parse(D+'/timeline.svg').getroot()
texts=[t.text for t in r.iter(ns+'text')]
for p in memsup.read_processes(D):
    want='pid %d demo_tree' % p['pid']
    assert want in texts, (want, texts)
assert 'other processes' not in texts
bands=[p for p in r.iter(ns+'path') if (p.get('class') or '').startswith('band ')]
assert len(bands)==5, len(bands)
