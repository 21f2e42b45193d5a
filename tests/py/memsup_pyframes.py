"""memsup_pyframes.py: the checks of tests/e2e/test_memsup_pyframes.c.

    python3 tests/py/memsup_pyframes.py CHECK EVIDENCE_DIR SRCDIR

CHECK names one of the functions below (the test's own name).  The
programs, tests/progs/py_sites.py and py_parent.py, mark each allocating
line "# ALLOC <function>" and print the truth (bytes held per function,
per pid) on stdout, which memsup keeps in stdout.log.  MT_PY_WANT
(default 3.11) is the interpreter's major.minor the images must say;
MT_PY_POSING (default 3.99.0) the version unknown_version_falls_back's
image was told it is.  The checks read
stacks.json with the json module (a real parser, not memsup's).  Standard
library only.
"""
import json, os, re, sys

CHECK = sys.argv[1]
d, src = sys.argv[2], sys.argv[3]
st = json.load(open(os.path.join(d, 'stacks.json'), encoding='utf-8'))
frames = st['frames']
log = open(os.path.join(d, 'stdout.log')).read()
WANT = os.environ.get('MT_PY_WANT', '3.11')


def alloc_lines(name):
    out = {}
    path = os.path.join(src, 'tests', 'progs', name)
    for no, line in enumerate(open(path, encoding='utf-8'), 1):
        m = re.search(r'# ALLOC (\w+)', line)
        if m:
            out[m.group(1)] = no
    return out


SITES = alloc_lines('py_sites.py')
PARENT = alloc_lines('py_parent.py')
TRUTH = {}
for m in re.finditer(r'pid=(\d+) half=(\d+) thirty=(\d+) twenty=(\d+)', log):
    TRUTH[int(m.group(1))] = {'half': int(m.group(2)), 'thirty': int(m.group(3)),
                              'twenty': int(m.group(4))}


def innermost_python(site):
    for i in site['frames']:
        if frames[i].get('python'):
            return frames[i]
    return None


def python_shares(sites, lines, prog):
    """{function: bytes} by the innermost Python frame, each checked to
    be at its allocation line of prog; also checks the frames' order."""
    got = {}
    for s in sites:
        f = innermost_python(s)
        if f is None or f['function'] not in lines:
            continue
        assert f['file'].endswith('/' + prog), f
        assert f['line'] == lines[f['function']], (f, lines)
        fs = [frames[i] for i in s['frames']]
        names = [x['function'] for x in fs]
        # interleaved: native frames inside (the allocation) and outside
        # (the interpreter's start) the Python ones, and no evaluation
        # loop frame left where Python frames stand
        first = next(k for k, x in enumerate(fs) if x.get('python'))
        last = max(k for k, x in enumerate(fs) if x.get('python'))
        assert first > 0 and not any(x.get('python') for x in fs[:first]), names
        assert last + 1 < len(fs) and 'Py_RunMain' in names[last + 1:], names
        assert '_PyEval_EvalFrameDefault' not in names, names
        py = [x['function'] for x in fs[first:last + 1] if x.get('python')]
        assert py[-1] == '<module>', py
        got[f['function']] = got.get(f['function'], 0) + s['bytes']
    return got


def check_image_shares(img, truth):
    at = img['at_peak']
    got = python_shares(at['sites'], SITES, 'py_sites.py')
    total = sum(truth.values())
    for fn in ('half', 'thirty', 'twenty'):
        share, want = got.get(fn, 0) / at['estimated_bytes'], truth[fn] / total
        print('pid %d %s: estimated %.1f%%, true %.1f%%' % (img['pid'], fn, 100 * share,
                                                            100 * want))
        assert abs(share - want) <= 0.05, (fn, share, want)


def python_functions_and_lines():
    assert len(TRUTH) == 1, TRUTH
    (pid, truth), = TRUTH.items()
    img = next(i for i in st['images'] if i['pid'] == pid)
    py = img['python']
    assert py and py['frames'] == 'python' and py['version'].startswith(WANT + '.'), py
    assert py['python_samples'] > 0 and py['code_objects'] > 0, py
    check_image_shares(img, truth)
    # the tree's heap peak says the same
    t = st['tree']['heap_peak']
    got = python_shares(t['sites'], SITES, 'py_sites.py')
    for fn in ('half', 'thirty', 'twenty'):
        share = got.get(fn, 0) / t['estimated_bytes']
        want = truth[fn] / sum(truth.values())
        assert abs(share - want) <= 0.05, ('tree', fn, share, want)


def python_children_too():
    assert len(TRUTH) == 2, TRUTH
    m = re.search(r'parent pid=(\d+) holds=(\d+)', log)
    ppid, holds = int(m.group(1)), int(m.group(2))
    imgs = {i['pid']: i for i in st['images']}
    for pid, truth in TRUTH.items():
        assert imgs[pid]['python']['frames'] == 'python', imgs[pid]
        assert imgs[pid]['python']['version'].startswith(WANT + '.'), imgs[pid]
        check_image_shares(imgs[pid], truth)
    parent = imgs[ppid]
    got = python_shares(parent['at_peak']['sites'], PARENT, 'py_parent.py')
    held = got.get('größe_hält', 0)
    se = parent['at_peak']['se_bytes']
    print('parent größe_hält: %.1f MB of the %.1f MB it holds (se %.1f MB), %.1f%% of its heap' % (
        held / 1e6, holds / 1e6, se / 1e6, 100 * held / parent['at_peak']['estimated_bytes']))
    # what it holds, within 4 standard errors of the estimate: the rest of
    # the heap is the interpreter's own, more of it in 3.13 than in 3.11
    assert abs(held - holds) <= 4 * se + 0.01 * holds, (held, holds, se, got)
    assert held > parent['at_peak']['estimated_bytes'] / 2, (held, got)


def unknown_version_falls_back():
    assert len(TRUTH) == 1, TRUTH
    (pid, truth), = TRUTH.items()
    img = next(i for i in st['images'] if i['pid'] == pid)
    py = img['python']
    assert py == {'version': os.environ.get('MT_PY_POSING', '3.99.0'),
                  'frames': 'native_only_unknown_version',
                  'python_samples': 0, 'python_frames': 0, 'truncated_samples': 0,
                  'code_objects': 0}, py
    assert not any(f.get('python') for f in frames), 'a Python frame without a walk'
    names = {f['function'] for f in frames}
    assert '_PyEval_EvalFrameDefault' in names, 'the native frames stay'
    print('fell back:', py)


def native_program_has_none():
    assert st['images'], st
    for img in st['images']:
        assert img['python'] is None, img
    for f in frames:
        assert not f.get('python'), f
    print('%d images, %d frames, none Python' % (len(st['images']), len(frames)))


globals()[CHECK]()
