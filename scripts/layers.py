#!/usr/bin/env python3
"""layers.py: check that a tree's folders are its call order.

A spec file names the layers bottom first and the objects that hold their
code.  Each object's undefined symbols are resolved, through nm, to the
object that defines them; each source's and header's #include "..." lines
to the header's file.  An edge from a file to a file of a higher layer is an
upward edge; the strongly connected components of the files are the call
cycles.  Either is a failure, unless the spec lists the edge:

    # comment
    objects GLOB...           the compiled objects (.o, under --objdir); an
                              object stands for the source of its stem
                              (dir/.libs/target-name.o -> dir/name.c), and
                              only objects of a layer's sources are read
    incdir DIR...             where #include "x.h" is searched after the
                              including file's folder (the -I list)
    layer NAME GLOB...        a layer, bottom first: its sources and headers
                              (globs of paths under --srcdir); a header no
                              glob names belongs to its folder's layer
    allow FILE_A FILE_B WHY   a deliberate edge: A calls or includes B where
                              B is not below A (FILE is a path without its
                              .c/.h: a file is its source and header)

Files are paths without the extension, so foo.c and foo.h are one file.
Edges inside one layer are allowed (a layer has no order inside it), but
they count in the cycles: the check fails when a cycle, with the allowed
edges taken out, holds more than --max-cycle files (2 by default: a file
pair that calls both ways inside one layer).  A cycle that holds an allowed
edge is reported, with the reason.

Output: the upward edges (file -> file, and each symbol or include that
makes it), the largest cycle, and one line of counts; --tap prints it as TAP
(two tests).  Exit status 1 on an upward edge or a cycle too large, 2 on a
bad spec.  Python 3 standard library and nm (binutils) only.
"""
import argparse
import fnmatch
import glob
import os
import re
import subprocess
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXTS = (".c", ".h")


class SpecError(Exception):
    pass


def parse_spec(path):
    spec = {"objects": [], "incdirs": [], "layers": [], "allow": {}}
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            words = line.split()
            kind, args = words[0], words[1:]
            if kind == "objects" and args:
                spec["objects"] += args
            elif kind == "incdir" and args:
                spec["incdirs"] += args
            elif kind == "layer" and len(args) >= 2:
                spec["layers"].append((args[0], args[1:]))
            elif kind == "allow" and len(args) >= 3:
                a, b = strip_ext(args[0]), strip_ext(args[1])
                spec["allow"][(a, b)] = " ".join(args[2:])
            else:
                raise SpecError(f"{path}:{lineno}: cannot read: {raw.strip()}")
    if not spec["layers"]:
        raise SpecError(f"{path}: no layer")
    return spec


def strip_ext(p):
    base, ext = os.path.splitext(p)
    return base if ext in SOURCE_EXTS else p


def list_files(srcdir, spec):
    """Each source and header under a layer's globs -> the layer's index;
    then the headers of those folders that no glob names."""
    layer_of = {}
    for i, (_, globs) in enumerate(spec["layers"]):
        for g in globs:
            for p in sorted(glob.glob(os.path.join(srcdir, g))):
                rel = os.path.relpath(p, srcdir)
                if rel.endswith(SOURCE_EXTS) and rel not in layer_of:
                    layer_of[rel] = i
    folders = {}
    for rel, i in layer_of.items():
        folders.setdefault(os.path.dirname(rel), set()).add(i)
    for folder, idx in folders.items():
        for p in sorted(glob.glob(os.path.join(srcdir, folder, "*.h"))):
            rel = os.path.relpath(p, srcdir)
            if rel not in layer_of and len(idx) == 1:
                layer_of[rel] = next(iter(idx))
    return layer_of


def object_source(obj, objdir, srcdir, layer_of):
    """dir/.libs/target-name.o (or dir/target-name.o, dir/name.o) -> the
    source dir/name.c that a layer holds, or None."""
    rel = os.path.relpath(obj, objdir)
    d, base = os.path.split(rel)
    if os.path.basename(d) == ".libs":
        d = os.path.dirname(d)
    stem = os.path.splitext(base)[0]
    cands = [stem]
    if "-" in stem:
        cands.append(stem.split("-", 1)[1])
    for c in cands:
        src = os.path.join(d, c + ".c")
        if src in layer_of:
            return src
    return None


def nm_symbols(obj):
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind in ("U", "w", "v"):
            undefined.add(name)
        elif kind.isupper():  # global (or weak defined: W, V)
            defined.add(name)
    return defined, undefined


def resolve_include(inc, including, srcdir, incdirs):
    for d in [os.path.dirname(including)] + incdirs:
        rel = os.path.normpath(os.path.join(d, inc))
        if os.path.isfile(os.path.join(srcdir, rel)):
            return rel
    return None


def sccs(nodes, edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, onstack, stack, out = {}, {}, set(), [], []
    counter = [0]
    succ = {n: sorted({b for (a, b) in edges if a == n}) for n in nodes}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                onstack.add(v)
            recurse = False
            for j in range(i, len(succ[v])):
                w = succ[v][j]
                if w not in index:
                    work.append((v, j + 1))
                    work.append((w, 0))
                    recurse = True
                    break
                if w in onstack:
                    low[v] = min(low[v], index[w])
            if recurse:
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--srcdir", default=".")
    ap.add_argument("--objdir", default=".")
    ap.add_argument("--max-cycle", type=int, default=2)
    ap.add_argument("--tap", action="store_true")
    ap.add_argument("--no-objects", action="store_true",
                    help="includes only (no nm of the objects)")
    args = ap.parse_args(argv)
    try:
        spec = parse_spec(args.spec)
    except (OSError, SpecError) as e:
        print(f"layers.py: {e}", file=sys.stderr)
        return 2
    names = [n for n, _ in spec["layers"]]
    layer_of = list_files(args.srcdir, spec)
    flayer = {}  # file (path without extension) -> layer index
    for rel, i in layer_of.items():
        flayer.setdefault(strip_ext(rel), i)
    # why[(a, b)] = the symbols and includes that make the edge a -> b
    why = {}

    def add(a, b, what):
        if a != b:
            why.setdefault((a, b), set()).add(what)

    # symbols
    nobj = 0
    if not args.no_objects:
        objs = {}
        for g in spec["objects"]:
            for o in sorted(glob.glob(os.path.join(args.objdir, g))):
                src = object_source(o, args.objdir, args.srcdir, layer_of)
                if src is not None:
                    objs.setdefault(strip_ext(src), o)
        missing = sorted(f for f, i in flayer.items()
                         if f + ".c" in layer_of and f not in objs)
        if missing:
            print(f"layers.py: no object for {', '.join(missing)} (not built?)", file=sys.stderr)
            return 2
        definer, undef = {}, {}
        for f, o in objs.items():
            d, u = nm_symbols(o)
            undef[f] = u
            for s in d:
                definer.setdefault(s, f)
        nobj = len(objs)
        for f, u in undef.items():
            for s in u:
                if s in definer:
                    add(f, definer[s], s)
    # includes
    for rel in sorted(layer_of):
        with open(os.path.join(args.srcdir, rel), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in INCLUDE_RE.findall(text):
            target = resolve_include(inc, rel, args.srcdir, spec["incdirs"])
            if target is not None and target in layer_of:
                add(strip_ext(rel), strip_ext(target), f'#include "{inc}"')

    allowed_used = set()
    upward = []
    for (a, b), w in sorted(why.items()):
        if flayer[b] > flayer[a]:
            if (a, b) in spec["allow"]:
                allowed_used.add((a, b))
            else:
                upward.append((a, b, w))
    for e in why:
        if e in spec["allow"]:
            allowed_used.add(e)
    kept = {e for e in why if e not in spec["allow"]}
    comps_all = sccs(set(flayer), set(why))
    comps = sccs(set(flayer), kept)
    big_all = max(comps_all, key=len)
    big = max(comps, key=len)

    lines = []
    lines.append(f"layers, bottom first: {' < '.join(names)}")
    for a, b, w in upward:
        lines.append(f"upward: {a} ({names[flayer[a]]}) -> {b} ({names[flayer[b]]}): "
                     + ", ".join(sorted(w)))
    for (a, b), reason in sorted(spec["allow"].items()):
        state = "" if (a, b) in allowed_used else " (no such edge: stale)"
        lines.append(f"allowed: {a} -> {b}: {reason}{state}")
    for c in sorted(comps_all, key=len, reverse=True):
        if len(c) < 2:
            break
        lines.append(f"cycle of {len(c)} files: {' '.join(c)}")
    lines.append(f"{len(flayer)} files, {nobj} objects, {len(why)} edges, "
                 f"{len(upward)} upward, largest cycle {len(big_all)} files "
                 f"({len(big)} without the allowed edges)")
    bad_cycle = len(big) > args.max_cycle
    if args.tap:
        print("1..2")
        for ln in lines:
            print("# " + ln)
        print(("not ok" if upward else "ok")
              + f" 1 - no upward edge among {len(why)} ({len(upward)} upward)")
        print(("not ok" if bad_cycle else "ok")
              + f" 2 - largest call cycle {len(big)} file(s) without the allowed edges, "
              f"{len(big_all)} with them (at most {args.max_cycle})")
    else:
        print("\n".join(lines))
    return 1 if upward or bad_cycle else 0


if __name__ == "__main__":
    sys.exit(main())
