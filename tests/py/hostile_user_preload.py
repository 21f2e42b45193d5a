"""hostile_user_preload.py: run by tests/e2e/test_memsup_hostile.c
(user_preload_case: user_ld_preload_kept_from_environment,
user_ld_preload_kept_from_env_option).

    python3 tests/py/hostile_user_preload.py EVIDENCE_DIR LOG LIB MEMSUP

LOG is what the user's own preload (tests/progs/x_userpreload.c, at LIB)
wrote: a line "PID EXE<TAB>LD_PRELOAD" per image it ran in.  Every image of
the command that started a new image (fork children run no constructor)
must have run both it and the shim, the user's library first; memsup's own
line (EXE = MEMSUP) is left out.  Standard library and scripts/memsup.py.
"""
import json, sys, os
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402
ev, log, lib, memsup_exe = sys.argv[1:5]
lines = [l.split(' ', 1) for l in open(log).read().splitlines()]
seen = sorted((int(pid), rest.split('\t')[0]) for pid, rest in lines
              if rest.split('\t')[0] != memsup_exe)
pre = set(rest.split('\t')[1] for pid, rest in lines if rest.split('\t')[0] != memsup_exe)
assert len(pre) == 1, pre
pre = pre.pop().split(':')
assert len(pre) == 2 and pre[0] == lib and pre[1].endswith('libmemtrace.so'), pre
procs = memsup.read_processes(ev)
traced = sorted((p['pid'], p['exe']) for p in procs
                if p['traced'] and p['lineage']['relation'] != 'fork')
assert seen == traced, 'user preload ran in %s, the shim in %s' % (seen, traced)
assert len(traced) == 3, traced
assert all(p['traced'] for p in procs), procs
n = sum(1 for p in procs if p['exe'].endswith('/x_argdump'))
assert n == 2, n
