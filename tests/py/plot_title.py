"""plot_title.py: run by tests/unit/test_plot.c
(hostile_text_is_escaped): the SVG's <title>, read back by
xml.etree, is the hostile title the test gave, with every byte that is not
valid UTF-8 (and every control character) turned into one U+FFFD and the
markup characters kept as text.

    python3 tests/py/plot_title.py FILE.svg

Standard library only.
"""
import sys,xml.etree.ElementTree as E
t=E.parse(sys.argv[1]).getroot().find('{http://www.w3.org/2000/svg}title').text
want='a&b<c>d"e\'f]]>\ufffd\ufffd[31m \ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\u20ac ok \ufffd\ufffd\ufffd\ufffd<!--x-->'
assert t==want, (t, want)
