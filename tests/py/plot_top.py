"""plot_top.py: run by tests/unit/test_plot.c (end_to_end_bands_of_demo_tree).

    python3 tests/py/plot_top.py EVIDENCE_DIR

memsup ran tests/progs/demo_tree (four processes): every timeline.jsonl
line has "top", at most five, largest first, pids of the tree, summing to
exactly "rss" (the tree never has more than four members), and some line
has all four.  Standard library and scripts/memsup.py.
"""
import sys,json, os
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402
D=sys.argv[1]
P={p['pid'] for p in memsup.read_processes(D)}
assert len(P)==4, P
n=0; most=0
for l in open(D+'/timeline.jsonl'):
    o=json.loads(l); top=o['top']; n+=1
    assert len(top)<=5, l
    b=[x[1] for x in top]
    assert b==sorted(b,reverse=True), l
    assert sum(b)<=o['rss'], l
    assert len(top)==o['processes'] and sum(b)==o['rss'], l
    assert all(x[0] in P for x in top), (l, P)
    most=max(most,len(top))
assert n>10 and most==4, (n, most)
