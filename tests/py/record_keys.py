"""record_keys.py: run by rec_load() in tests/common/test_memsup_util.h, so
by most memsup tests after a run.

    python3 tests/py/record_keys.py DIR/resources.json

resources.json must be valid JSON (json module: a real parser, not
memsup's) holding every key of measure_command's record (the keys
memsup's record keeps; scripts/memsup.py lists them).  Prints each
top-level key and its value as JSON, "KEY<TAB>VALUE" a line, for rec_str()
and rec_num() to read.  Standard library only.
"""
import json,sys
d=json.load(open(sys.argv[1]))
original=['command','exit_code','reason','wall_s','peak_tree_rss_mb','poll_s','rss_budget_mb','wall_budget_s','scope','limitation']
miss=[k for k in original if k not in d]
assert not miss, 'missing measure_command keys: %s' % miss
for k,v in d.items(): print(k+'\t'+json.dumps(v))
