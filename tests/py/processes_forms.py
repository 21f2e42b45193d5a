"""processes_forms.py: run by tests/unit/test_processes.c (lean_reads_as_whole).

    python3 tests/py/processes_forms.py LEAN_DIR WHOLE_DIR RESOURCES_JSON

LEAN_DIR and WHOLE_DIR hold processes.json of one merged run, written lean
(what memsup writes: no key whose value is its default) and whole (every
key).  memsup.py's read_processes must give the whole file as json reads it
from both; and memsup report, memsup diff and memsup plot ($MEMSUP), each
given both directories beside the same resources.json, must print the same.
Standard library and scripts/memsup.py.
"""
import json, os, shutil, subprocess, sys

lean, whole, resources = sys.argv[1:4]
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402

want = json.load(open(os.path.join(whole, 'processes.json')))


def first_diff(a, b, path=''):
    if type(a) is not type(b):
        return '%s: %r against %r' % (path, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return '%s.%s: only on one side' % (path, k)
            d = first_diff(a[k], b[k], path + '.' + k)
            if d:
                return d
    elif isinstance(a, list):
        if len(a) != len(b):
            return '%s: %d items against %d' % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, '%s[%d]' % (path, i))
            if d:
                return d
    elif a != b:
        return '%s: %r against %r' % (path, a, b)
    return None


for d in (lean, whole):
    got = memsup.read_processes(d)
    assert got == want, 'read_processes(%s): %s' % (d, first_diff(got, want))
    shutil.copyfile(resources, os.path.join(d, 'resources.json'))

ms = os.environ['MEMSUP']


def run(*args):
    p = subprocess.run([ms] + list(args), capture_output=True, text=True,
                       errors='surrogateescape')
    out = p.stdout.replace(lean, 'DIR').replace(whole, 'DIR')
    return p.returncode, out, p.stderr.replace(lean, 'DIR').replace(whole, 'DIR')


checks = [('report', ['report', '--json', '{}']), ('report', ['report', '{}']),
          ('plot', ['plot', '{}', '-o', '-'])]
for name, args in checks:
    a = run(*[x.replace('{}', lean) for x in args])
    b = run(*[x.replace('{}', whole) for x in args])
    assert a == b, '%s reads the two forms differently:\n%r\n%r' % (name, a, b)
    assert a[0] == 0, (name, a)
# diff: the lean run against the whole one compares as the whole against itself
a = run('diff', '--json', whole, lean)
b = run('diff', '--json', whole, whole)
assert a == b, 'diff reads the two forms differently:\n%r\n%r' % (a, b)
a = run('diff', lean, lean)
b = run('diff', whole, whole)
assert a == b, 'diff reads the two forms differently:\n%r\n%r' % (a, b)
print('ok: %d images read the same from both forms' % len(want))
