"""plot_answer.py: run by tests/unit/test_plot.c (the answer's tests:
answer_is_the_cgroup_line, kernel_split_stacks_to_the_cgroup_line,
limit_events_marked_at_their_samples, heap_off_the_scale_is_clipped).

    python3 tests/py/plot_answer.py line FILE RATIO
        the answer's line (path.answer) peaks at RATIO of the summed RSS
        line's peak (heights above the x axis), and the peak dot is on it
    python3 tests/py/plot_answer.py kernel FILE CUMULATIVE
        the kernel's split (path.kband-*) stacks to the answer's line: at
        every column the stack has a point, the top of its last band is the
        line's y there; and at the line's peak each band's top is at the
        share CUMULATIVE ("anon,+page cache,+shmem,+kernel,cgroup" bytes)
    python3 tests/py/plot_answer.py event FILE KIND T TMAX
        one mark of KIND (limit, oom: g.event.KIND) and its apex is at
        time T of a time axis from 0 to TMAX
    python3 tests/py/plot_answer.py heap FILE FRAC T TMAX
        the summed RSS line reaches at least FRAC of the plot's height, the
        heap line stays inside the plot, and the heap's clip mark
        (g.heap-clip) is at time T

Positions are in the SVG's own coordinates, read from the plot's frame
(rect.plot-frame), within the 0.1 px they are rounded to.  Standard library
only.
"""
import sys,re,xml.etree.ElementTree as E
mode,f=sys.argv[1],sys.argv[2]
r=E.parse(f).getroot(); ns='{http://www.w3.org/2000/svg}'
def cls(el): return el.get('class') or ''
def pts(p): return [tuple(map(float,xy.split(','))) for xy in re.findall(r'-?[0-9.]+,-?[0-9.]+',p.get('d'))]
def path(c):
    ps=[p for p in r.iter(ns+'path') if cls(p)==c]
    assert ps, ('no path', c)
    return pts(ps[0])
# the main plot's frame (before it had a class: the first grey outline)
fr=([x for x in r.iter(ns+'rect') if cls(x)=='plot-frame'] or
    [x for x in r.iter(ns+'rect') if x.get('stroke')=='#888' and x.get('fill')=='none'])[0]
x0,y0=float(fr.get('x')),float(fr.get('y'))
x1,y1=x0+float(fr.get('width')),y0+float(fr.get('height'))
def at_x(ps,x,pick=min):
    ys=[y for xx,y in ps if abs(xx-x)<0.05]
    assert ys, ('nothing at x',x)
    return pick(ys)

if mode=='line':
    ans=path('answer'); rss=path('rss')
    ya=min(y for x,y in ans); yr=min(y for x,y in rss)
    got=(y1-ya)/(y1-yr); want=float(sys.argv[3])
    assert abs(got-want)<0.2/(y1-yr)+1e-9, ('answer/rss',got,want)
    dot=[g for g in r.iter(ns+'g') if cls(g)=='peak'][0].find(ns+'circle')
    assert abs(float(dot.get('cy'))-ya)<0.11, ('peak dot',dot.get('cy'),'answer top',ya)
elif mode=='kernel':
    names=['anon','page-cache','shmem','kernel']
    lv={n:path('kband kband-'+n) for n in names}
    ans=path('answer')
    top=lv['kernel'][1:-1]           # without the two corners on the axis
    assert len(top)>=2, top
    for x,y in top:
        ya=at_x(ans,x)
        assert abs(y-ya)<0.11, ('stack top',y,'cgroup line',ya,'at x',x)
    ya=min(y for x,y in ans); xp=[x for x,y in ans if y==ya][0]
    want=[float(v) for v in sys.argv[3].split(',')]
    for k,n in enumerate(names):
        got=(y1-at_x(lv[n][1:-1],xp))/(y1-ya)
        assert abs(got-want[k]/want[-1])<0.2/(y1-ya)+1e-9, (n,got,want[k]/want[-1])
elif mode=='event':
    kind,t,tmax=sys.argv[3],float(sys.argv[4]),float(sys.argv[5])
    ev=[g for g in r.iter(ns+'g') if cls(g)=='event '+kind]
    assert len(ev)==1, ('marks of',kind,len(ev))
    tri=pts(ev[0].find(ns+'path'))
    apex=min(tri,key=lambda p:p[1])
    want=x0+t/tmax*(x1-x0)
    assert abs(apex[0]-want)<0.11, ('mark at',apex[0],'want',want)
    assert abs(max(y for x,y in tri)-y1)<0.11, ('mark not on the time axis',tri,y1)
elif mode=='heap':
    frac,t,tmax=float(sys.argv[3]),float(sys.argv[4]),float(sys.argv[5])
    rss=path('rss'); heap=path('heap')
    got=(y1-min(y for x,y in rss))/(y1-y0)
    assert got>=frac, ('summed RSS uses',got,'of the height')
    assert min(y for x,y in heap)>=y0-0.05, 'the heap line leaves the plot'
    clip=[g for g in r.iter(ns+'g') if cls(g)=='heap-clip']
    assert len(clip)==1, 'no clip mark'
    apex=min(pts(clip[0].find(ns+'path')),key=lambda p:p[1])
    want=x0+t/tmax*(x1-x0)
    assert abs(apex[0]-want)<0.11 and apex[1]<y0, ('clip mark at',apex,'want x',want)
else:
    sys.exit('unknown mode '+mode)
