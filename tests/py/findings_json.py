"""findings_json.py: run by tests/unit/test_findings.c
(json_parses_with_exact_argv_and_safe_sentences).

    python3 tests/py/findings_json.py FILE.json ARGV0_HEX COUNT

FILE.json holds {"blind_spots": [...]} as findings_write_json() wrote it
for a hand-made run whose unsampled process has a hostile argv[0] (given
here in hex) and "café".  It must parse (json module: a real parser, not
ours) to COUNT findings, each with a sentence that ends in "." and holds
no control character (C0, DEL or C1), every other key a number named with
its unit; argv must come back byte for byte through surrogateescape; and
the untraced, escaped and rusage_children findings carry their figures.
Standard library only.
"""
import json, os, sys
d = json.load(open(sys.argv[1]))
b = d["blind_spots"]
assert isinstance(b, list) and len(b) == int(sys.argv[3]), b
std = {"kind", "sentence", "processes", "processes_total", "untraced_why"}
units = ("_mb", "_s", "_pct", "_count")
for f in b:
    assert isinstance(f["sentence"], str) and f["sentence"].endswith(".")
    assert all(ord(c) >= 0x20 and not 0x7f <= ord(c) <= 0x9f for c in f["sentence"]), f
    for k, v in f.items():
        if k not in std:
            assert k.endswith(units), k
            assert isinstance(v, (int, float)), (k, v)
    assert f["processes_total"] >= len(f["processes"])
u = [f for f in b if f["kind"] == "unsampled_processes"][0]
p = u["processes"][0]
want = [bytes.fromhex(sys.argv[2]), "caf\u00e9".encode()]
got = [os.fsencode(a) for a in p["argv"]]
assert got == want, (got, want)
assert p["traced"] is True and p["sampled"] is False
assert abs(p["heap_peak_mb"] - 400) < 1e-9, p
t = [f for f in b if f["kind"] == "untraced"][0]
assert t["processes"][0]["untraced_why"] == "static", t
assert t["static_count"] == 1
e = [f for f in b if f["kind"] == "escaped"][0]
assert e["processes"][0]["killed_by_memsup"] is True
r = [f for f in b if f["kind"] == "rusage_children"][0]
assert r["tree_peak_mb"] == 125.0 and r["processes_at_peak_count"] == 5, r
