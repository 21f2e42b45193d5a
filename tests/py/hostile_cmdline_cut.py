"""hostile_cmdline_cut.py: run by tests/e2e/test_memsup_hostile.c
(untraced_long_cmdline_says_cut).

    python3 tests/py/hostile_cmdline_cut.py EVIDENCE_DIR cut|whole

Untraced, memsup keeps PROCFS_ARGV_BYTES of /proc/PID/cmdline.  "cut": the
untraced process's argv in processes.json was cut and says so (argc
unknown); "whole": a short one is kept whole, argc known.  Standard
library only.
"""
import json, sys, os
# processes.json through memsup.py's reader: every key, defaults put back
sys.path.insert(0, os.path.join(os.environ['MT_SRCDIR'], 'scripts'))
import memsup  # noqa: E402
ev, mode = sys.argv[1:3]
p = [p for p in memsup.read_processes(ev) if not p['traced']][0]
if mode == 'cut':
    assert p['argv_truncated'] is True and p['argc'] is None, p
    assert 0 < len(''.join(p['argv'])) < 6000, len(''.join(p['argv']))
else:
    assert p['argv_truncated'] is False and p['argc'] == 4, p
    assert p['argv'][1:] == ['1', '300', ''], p['argv']
print('ok')
