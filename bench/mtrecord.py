"""mtrecord.py: read libmemtrace record files (*.mtr) and the headers of its
stacks files (*.mts) from Python for bench/.

The layouts are whatever common/record.h and common/stacks.h say at the time
of the run: a small C program is compiled against each header to print the
offsets of the fields read here, so this reader cannot drift from the
contracts.  Stdlib only.
"""
import json
import os
import struct
import subprocess
import tempfile
from pathlib import Path

import benchlib

U64_FIELDS = [
    "magic", "heap_current", "heap_peak", "heap_requested_total", "heap_largest_request",
    "map_anon_current", "map_anon_peak", "map_file_current", "map_file_peak",
    "total_current", "total_peak",
]
U32_FIELDS = ["version", "record_size", "pid", "ppid", "gen", "relation", "state", "flags"]
CALLS = ["MALLOC", "CALLOC", "REALLOC", "REALLOCARRAY", "FREE", "POSIX_MEMALIGN",
         "ALIGNED_ALLOC", "MEMALIGN", "VALLOC", "PVALLOC", "MMAP", "MUNMAP", "MREMAP"]

_LAYOUT = None


def _print_offsets(header, lines):
    """Compile `lines` (the body of main, printing one JSON object) against
    preload/<header> and return what it prints, parsed."""
    src_lines = ['#include <stddef.h>', '#include <stdio.h>', f'#include "{header}"',
                 'int main(void) {', 'printf("{");'] + lines + ['return 0; }']
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "off.c"
        src.write_text("\n".join(src_lines) + "\n")
        exe = Path(d) / "off"
        subprocess.run([os.environ.get("CC", "cc"), "-I", str(benchlib.SRC_DIR / "common"),
                        "-o", str(exe), str(src)], check=True)
        return json.loads(subprocess.run([str(exe)], capture_output=True, text=True,
                                         check=True).stdout)


def layout():
    """{field: offset} for U64_FIELDS + U32_FIELDS, 'calls' offset, call indices."""
    global _LAYOUT
    if _LAYOUT is not None:
        return _LAYOUT
    lines = []
    for f in U64_FIELDS + U32_FIELDS + ["calls"]:
        lines.append(f'printf("\\"{f}\\": %zu, ", offsetof(struct mt_record, {f}));')
    for c in CALLS:
        lines.append(f'printf("\\"call_{c.lower()}\\": %d, ", (int)MT_CALL_{c});')
    lines.append('printf("\\"magic_value\\": %llu, \\"size\\": %u}\\n", '
                 '(unsigned long long)MT_RECORD_MAGIC, (unsigned)MT_RECORD_SIZE);')
    _LAYOUT = _print_offsets("record.h", lines)
    return _LAYOUT


def read_record(path):
    """dict of the fields above from one record file, or None if it is not one."""
    lay = layout()
    data = Path(path).read_bytes()
    if len(data) < lay["size"]:
        return None
    rec = {}
    for f in U64_FIELDS:
        rec[f] = struct.unpack_from("<Q", data, lay[f])[0]
    for f in U32_FIELDS:
        rec[f] = struct.unpack_from("<I", data, lay[f])[0]
    if rec["magic"] != lay["magic_value"]:
        return None
    calls = {}
    for c in CALLS:
        idx = lay[f"call_{c.lower()}"]
        calls[c.lower()] = struct.unpack_from("<Q", data, lay["calls"] + 8 * idx)[0]
    rec["calls"] = calls
    return rec


def read_dir(directory):
    recs = []
    for p in sorted(Path(directory).glob("*.mtr")):
        r = read_record(p)
        if r is not None:
            r["file"] = p.name
            recs.append(r)
    return recs


STACKS_U64 = [
    "magic", "samples", "sampled_frees", "untracked_samples", "catchall_samples",
    "skipped_samples", "lost_frees", "fp_samples", "backtrace_samples", "sample_ns",
    "module_refreshes", "peak_heap", "seen_heap_peak", "sample_bytes",
]
STACKS_U32 = ["version", "pid", "gen", "module_count", "stack_count", "state", "flags"]

_STACKS_LAYOUT = None


def stacks_layout():
    """{field: offset} of the stacks file header (common/stacks.h)."""
    global _STACKS_LAYOUT
    if _STACKS_LAYOUT is not None:
        return _STACKS_LAYOUT
    lines = []
    for f in STACKS_U64 + STACKS_U32:
        lines.append(f'printf("\\"{f}\\": %zu, ", offsetof(struct mt_stacks_header, {f}));')
    lines.append('printf("\\"magic_value\\": %llu}\\n", (unsigned long long)MT_STACKS_MAGIC);')
    _STACKS_LAYOUT = _print_offsets("stacks.h", lines)
    return _STACKS_LAYOUT


def read_stacks(path):
    """dict of the header fields above from one stacks file, or None."""
    lay = stacks_layout()
    data = Path(path).read_bytes()
    if len(data) < 4096:
        return None
    h = {f: struct.unpack_from("<Q", data, lay[f])[0] for f in STACKS_U64}
    h.update({f: struct.unpack_from("<I", data, lay[f])[0] for f in STACKS_U32})
    return h if h["magic"] == lay["magic_value"] else None


def read_stacks_dir(directory):
    out = []
    for p in sorted(Path(directory).glob("*.mts")):
        h = read_stacks(p)
        if h is not None:
            h["file"] = p.name
            out.append(h)
    return out
