#!/bin/bash
# docs_architecture.sh: docs/architecture.md's map of the files ("## The
# files") is the tree's: every folder of preload/ and supervisor/ that holds
# code is named there under its parent, every folder named there exists,
# and every module (x.c) of those folders is named in its folder's entry,
# so that a file moved, added or split cannot leave the map behind.
# Output: TAP.  Needs MT_SRCDIR.
set -u
: "${MT_SRCDIR:?MT_SRCDIR is not set}"
exec python3 - "$MT_SRCDIR" <<'PY'
import glob, os, re, sys

top = sys.argv[1]
text = open(os.path.join(top, "docs/architecture.md"), encoding="utf-8").read()
m = re.search(r"^## The files\n+```\n(.*?)^```", text, re.M | re.S)
checks = []
if not m:
    print("1..1\nnot ok 1 - docs/architecture.md has a \"## The files\" block")
    sys.exit(1)
# The block: a top entry starts in column 0 ("supervisor/  ..."), a
# folder's in column 2 ("  base/  ..."); continuation lines are indented.
entries = {}  # "supervisor" or "supervisor/base" -> its text
parent = cur = None
for line in m.group(1).splitlines():
    t = re.match(r"^([a-z][\w.-]*)/\s", line)
    s = re.match(r"^  ([a-z][\w.-]*)/\s", line)
    if t:
        parent = cur = t.group(1)
        entries[cur] = line
    elif s and parent:
        cur = parent + "/" + s.group(1)
        entries[cur] = line
    elif cur:
        entries[cur] += "\n" + line
for root in ("preload", "supervisor"):
    checks.append((root in entries, "%s/ has an entry" % root))
    for d in sorted(glob.glob(os.path.join(top, root, "*/"))):
        name = root + "/" + os.path.basename(d.rstrip("/"))
        sources = sorted(glob.glob(os.path.join(d, "*.c")))
        if not sources and not glob.glob(os.path.join(d, "*.h")):
            continue
        checks.append((name in entries or name == root + "/run" and root in entries,
                       "%s/ is named under %s/" % (name, root)))
    for key in [k for k in entries if k.startswith(root + "/")]:
        checks.append((os.path.isdir(os.path.join(top, key)), "%s/ exists" % key))
    for src in sorted(glob.glob(os.path.join(top, root, "*.c")) +
                      glob.glob(os.path.join(top, root, "*/*.c"))):
        rel = os.path.relpath(src, top)
        folder = os.path.dirname(rel)
        stem = os.path.basename(rel)[:-2]
        # run/'s parts are the top's: named in supervisor/'s entry
        where = entries.get(folder) or entries.get(os.path.dirname(folder), "")
        checks.append((re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(stem), where) is not None,
                       "%s is named in %s/'s entry" % (rel, folder)))
print("1..%d" % len(checks))
bad = 0
for i, (ok, what) in enumerate(checks, 1):
    print("%s %d - %s" % ("ok" if ok else "not ok", i, what))
    bad += not ok
sys.exit(1 if bad else 0)
PY
