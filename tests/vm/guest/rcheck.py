#!/usr/bin/env python3
"""rcheck.py DIR EXPR...: each Python expression holds on DIR/resources.json.

In an expression, r is the record and c its "containment".  Prints what
the record says of the answer and of the containment, then each expression
that does not hold; exit status 1 if one does not (or there is no record).
"""
import json
import sys


def main():
    path = sys.argv[1] + "/resources.json"
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        print("FAILED: no record: %s" % e)
        return 1
    c = r.get("containment") or {}
    print("record: peak_source=%s peak_mb=%s exit_status=%s reason=%s"
          % (r.get("peak_source"), r.get("peak_mb"), r.get("exit_status"), r.get("reason")))
    print("containment: mode=%s kill=%s memory=%s pids=%s paths=%s"
          % (c.get("mode"), c.get("kill"), c.get("memory"), c.get("pids"), c.get("paths")))
    missing = c.get("missing") or []
    for m in missing if isinstance(missing, list) else [missing]:
        print("missing: %s" % m)
    if c.get("hint"):
        print("hint: %s" % c["hint"])
    for k in ("max_procs_by", "max_procs_reached_at_s", "wall_s", "oom_kills"):
        if k in r:
            print("%s: %s" % (k, r[k]))
    bad = 0
    for e in sys.argv[2:]:
        try:
            ok = eval(e, {}, {"r": r, "c": c})
        except Exception as x:  # a missing key or a null is a failure too
            ok = False
            e = "%s (%s: %s)" % (e, type(x).__name__, x)
        if not ok:
            print("FAILED: %s" % e)
            bad = 1
    return bad


sys.exit(main())
