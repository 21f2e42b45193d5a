"""plot_stack.py: run by tests/unit/test_plot.c
(bands_stack_to_the_tree_rss_at_the_peak, end_to_end_bands_of_demo_tree).

    python3 tests/py/plot_stack.py FILE.svg CUMULATIVE

Reads the SVG: per process band path (class band-K / band-other) its
points; checks that the top level (band-other) peaks at the summed RSS
peak, that the summed RSS line's top is there too, and, at the peak's
column, that the level of each band k is the data's cumulative share
(CUMULATIVE: "c0,c1,...,rss" in bytes; "0" checks the top only), within
the 0.1 px the coordinates are rounded to.  The summed RSS peak is the
ring (g.rss-peak) where the picture's answer is another series, else the
peak dot (g.peak); where the bands have a panel of their own (g.panel,
beside the kernel's split) its outline (path.panel-rss) is the line and
the ring is in the main plot, so only the outline is checked.  Standard
library only.
"""
import sys,re,xml.etree.ElementTree as E
r=E.parse(sys.argv[1]).getroot(); ns='{http://www.w3.org/2000/svg}'
def pts(p): return [tuple(map(float,xy.split(','))) for xy in re.findall(r'[0-9.]+,[0-9.]+',p.get('d'))]
def cls(el): return el.get('class') or ''
bands={cls(p).split()[1]:pts(p) for p in r.iter(ns+'path') if cls(p).startswith('band ')}
assert 'band-other' in bands, bands.keys()
top=bands['band-other']; y1=top[0][1]
ymin=min(y for x,y in top)
panel=[g for g in r.iter(ns+'g') if cls(g)=='panel']
if panel:
    line=[p for p in r.iter(ns+'path') if cls(p)=='panel-rss'][0]
else:
    mark=[g for g in r.iter(ns+'g') if cls(g)=='rss-peak'] or [g for g in r.iter(ns+'g') if cls(g)=='peak']
    dot=mark[0].find(ns+'circle')
    cy=float(dot.get('cy'))
    assert abs(ymin-cy)<0.11, ('stack top',ymin,'summed RSS peak',cy)
    line=[p for p in r.iter(ns+'path') if cls(p)=='rss'][0]
assert abs(min(y for x,y in pts(line))-ymin)<0.11, 'RSS line top is not the stack top'
xp=[x for x,y in top if abs(y-ymin)<0.11][0]
def at(ps,x):
    ps=ps[1:-1]  # the two corners on the axis
    for (xa,ya),(xb,yb) in zip(ps,ps[1:]):
        if xa<=x<=xb: return ya if xb==xa else ya+(yb-ya)*(x-xa)/(xb-xa)
    return [y for x2,y in ps if x2==x][0]
want=[float(v) for v in sys.argv[2].split(',')]
for k in range(len(want)-1):
    got=(y1-at(bands['band-%d'%k],xp))/(y1-ymin)
    assert abs(got-want[k]/want[-1])<0.2/(y1-ymin)+1e-9, ('band',k,got,want[k]/want[-1])
