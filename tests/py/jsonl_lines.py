"""jsonl_lines.py: run by jsonl_whole_lines() in
tests/e2e/test_memsup_harden.h (the evidence-failure tests of
test_memsup_harden_evidence.c and others that check rss.jsonl or
timeline.jsonl).

    python3 tests/py/jsonl_lines.py FILE.jsonl

Every line is one JSON value (json module) and the file ends with a
newline, or is empty: no torn line.  Prints the number of lines.
Standard library only.
"""
import json,sys
b=open(sys.argv[1],'rb').read()
assert b==b'' or b.endswith(b'\n'), 'ends mid-line: %r' % b[-60:]
ls=b.split(b'\n')[:-1]
for l in ls: json.loads(l)
print(len(ls))
