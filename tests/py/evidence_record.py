"""evidence_record.py: run by tests/unit/test_evidence.c
(record_is_valid_json_and_atomic).

    python3 tests/py/evidence_record.py DIR/resources.json

The record the test had evidence_write_record() write is valid JSON (read
by the json module, a real parser, not ours) and holds what the test put
in: the hostile command bytes (a quote, a newline, \\x01 \\xff back through
surrogateescape), the exit figures, null for what was not set, the env
with the last A winning, the leftover's argv split at its NUL, the note;
and no resources.json.tmp is left beside it.  Standard library only.
"""
import json,sys,os
d=json.load(open(sys.argv[1]))
assert d["command"][1]=="we\"ird\n", d["command"]
assert os.fsencode(d["command"][2])==b"\x01\xff"
assert d["exit_code"]==-9 and d["signal"]==9 and d["exit_status"]==123
assert d["reason"] is None and d["wall_budget_s"] is None
assert d["rss_budget_mb"]==100.0 and d["peak_tree_rss_mb"]==123.456789
assert d["env"]=={"B":"two words","A":"3"}, d["env"]
assert d["leftover_processes_killed"]==[{"pid":42,"argv":["ab","cd"]}]
assert d["notes"]==["a note"]
assert not os.path.exists(sys.argv[1]+".tmp")
