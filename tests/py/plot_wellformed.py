"""plot_wellformed.py: run by tests/unit/test_plot.c (xml_ok, for most of
its tests, and end_to_end_peak_of_a_real_run): the file is well-formed XML
(judged by xml.etree, a real parser, not ours) and its root is an <svg>.

    python3 tests/py/plot_wellformed.py FILE.svg

Standard library only.
"""
import sys,xml.etree.ElementTree as E
r=E.parse(sys.argv[1]).getroot()
assert r.tag=='{http://www.w3.org/2000/svg}svg', r.tag
