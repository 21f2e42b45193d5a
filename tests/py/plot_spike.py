"""plot_spike.py: run by tests/unit/test_plot.c
(hour_at_100hz_is_small_and_keeps_spikes): after thinning an hour of
samples, the topmost point of the RSS line is still at the peak dot's
height (within the 0.1 px the coordinates are rounded to).

    python3 tests/py/plot_spike.py FILE.svg

Standard library only.
"""
import sys,re,xml.etree.ElementTree as E
r=E.parse(sys.argv[1]).getroot(); ns='{http://www.w3.org/2000/svg}'
line=[p for p in r.iter(ns+'path') if p.get('class')=='rss'][0]
ys=[float(y) for y in re.findall(r',([0-9.]+)',line.get('d'))]
dot=[g for g in r.iter(ns+'g') if g.get('class')=='peak'][0].find(ns+'circle')
assert abs(min(ys)-float(dot.get('cy')))<0.11, (min(ys), dot.get('cy'))
