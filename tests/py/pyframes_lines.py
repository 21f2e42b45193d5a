"""pyframes_lines.py: the ground truth of tests/unit/test_pyframes.c
(pyframes::lines_as_python_says and its 3.12 and 3.13 twins).  Run by
the interpreter under test (3.11, 3.12, 3.13), it compiles a source with long functions, lines that go back,
comprehensions, try/except, decorators and lines without a location, and
prints one line per code object:

    FIRSTLINENO LINETABLE_HEX UNIT:LINE,UNIT:LINE,...

LINE is the interpreter's own answer (code.co_lines(); -1 where it says
None) for every code unit.  Standard library only."""
import sys

SRC = '''
import os

def long_function(x):
    total = 0
''' + ''.join('    total += x * %d\n' % i for i in range(300)) + '''
    return total

@staticmethod
def decorated(a,
              b):
    return [i * a
            for i in range(b)
            if i % 2]

class K:
    def method(self):
        try:
            return 1 / 0
        except ZeroDivisionError:
            pass
        finally:
            self.x = (lambda y:
                      y + 1)(2)
        while True:
            break
        return {k: v for k, v in
                zip("ab", "cd")}

def far_jump():
    x = 1
''' + '\n' * 5000 + '''
    return x
'''


def walk(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, 'co_lines'):
            yield from walk(c)


for code in walk(compile(SRC, 'sample.py', 'exec')):
    units = len(code.co_code) // 2
    lines = [-1] * units
    for start, end, line in code.co_lines():
        for u in range(start // 2, end // 2):
            lines[u] = -1 if line is None else line
    print(code.co_firstlineno, code.co_linetable.hex(),
          ','.join('%d:%d' % (u, l) for u, l in enumerate(lines)))
