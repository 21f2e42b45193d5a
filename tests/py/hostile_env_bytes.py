"""hostile_env_bytes.py: run by tests/e2e/test_memsup_hostile.c
(every_byte_value_in_env).

    python3 tests/py/hostile_env_bytes.py EVIDENCE_DIR

resources.json "env" keeps X_HOSTILE, given with -e and holding every byte
1..255, exactly (turned back into bytes with surrogateescape).  Standard
library only.
"""
import json, sys
r = json.load(open(sys.argv[1] + '/resources.json'))
v = r['env']['X_HOSTILE'].encode('utf-8', 'surrogateescape')
assert v == bytes(range(1, 256)), v
