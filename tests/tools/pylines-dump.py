# Prints line-table test vectors for tests/unit/test_pylines.c from the running interpreter.
# SPDX-License-Identifier: MIT
#
# Run with the interpreter whose tables are wanted:
#   ~/.pyenv/versions/3.11.7/bin/python tests/tools/pylines-dump.py > tests/unit/data/pylines-3.11.txt
# For every code object of the samples below (and those nested in them) it
# prints
#   code <qualname> <format> <co_firstlineno> <number of code units>
#   table <the raw co_lnotab (<= 3.9) or co_linetable (3.10+) in hex, or ->
#   lines <the line of each code unit, -1 for none>
# where each line is the interpreter's own answer: PyCode_Addr2Line (what a
# frame's f_lineno uses), checked against what the version's Python-level
# view gives (dis line starts <= 3.9, co_lines() 3.10, co_positions() 3.11+).
# Works on 3.6+ (for 3.8+ vectors); written for the interpreters, not for speed.
import ctypes
import dis
import sys
import textwrap
import types

SAMPLES = '''
def simple(a, b):
    c = a + b
    return c * 2


def loop(n):
    total = 0
    for i in range(n):
        if i % 3:
            total += i
        else:
            total -= 1
    while total > 100:
        total //= 2
    return total


def tries(x):
    try:
        y = 1 / x
    except ZeroDivisionError as e:
        y = str(e)
    finally:
        x = None
    with open('/dev/null') as f:
        f.read()
    return y


def gen(n):
    for i in range(n):
        yield i
        yield from range(i)


async def coro(x):
    await x
    return [v async for v in x]


def comps(xs):
    a = [x * 2 for x in xs if x]
    b = {x: x for x in xs}
    c = {x for x in xs}
    d = (x for x in xs)
    f = lambda q: q + 1
    return a, b, c, d, f


class Klass:
    def method(self, v):
        def inner(w):
            return w + v
        return inner


@staticmethod
def decorated(
        a,
        b):
    return (a +
            b)


def wide(a):
    return a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a + a


def multi(a,
          b):
    x = (a
         +
         b)
    return [
        x,
        a,
    ]
'''


def gap_source():
    """A function whose lines jump by more than the one-byte deltas hold,
    forwards and back, and whose body is longer than 256 bytes of code."""
    body = ['def gaps(n):', '    x = 0']
    body += ['    x += n'] * 3
    body += [''] * 300
    body += ['    x += 1']
    body += [''] * 40
    body += ['    for i in range(n):', '        x += i'] + [''] * 200 + ['        x -= 1']
    body += ['    if x:'] + ['        x += %d' % i for i in range(150)]
    body += ['    return (x +'] + [''] * 180 + ['            n)']
    return '\n'.join(body) + '\n'


def big_source():
    """More than 255 lines in one statement and more than 256 constants:
    long jumps, EXTENDED_ARG."""
    lines = ['def big(v):', '    t = [']
    lines += ['        v + %d,' % i for i in range(400)]
    lines += ['    ]', '    return t']
    return '\n'.join(lines) + '\n'


def codes(co, prefix=''):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            for sub in codes(c):
                yield sub


def addr2line():
    f = ctypes.pythonapi.PyCode_Addr2Line
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.py_object, ctypes.c_int]
    return f


def api_lines(co, units):
    """The Python-level view of the lines, per code unit (None: no line)."""
    lines = [None] * units
    v = sys.version_info[:2]
    if v >= (3, 11):
        for i, pos in enumerate(co.co_positions()):
            lines[i] = pos[0]
    elif v >= (3, 10):
        for start, end, line in co.co_lines():
            for off in range(start, end, 2):
                lines[off // 2] = line
    else:
        starts = dict(dis.findlinestarts(co))
        cur = None
        for off in range(0, units * 2, 2):
            cur = starts.get(off, cur)
            lines[off // 2] = cur
    return lines


def main():
    v = sys.version_info[:2]
    fmt = 'lnotab' if v <= (3, 9) else ('310' if v == (3, 10) else '311')
    a2l = addr2line()
    print('# pylines-dump.py, Python %s' % sys.version.split()[0])
    srcs = [('samples.py', SAMPLES), ('gaps.py', gap_source()), ('big.py', big_source())]
    for fname, src in srcs:
        top = compile(textwrap.dedent(src), fname, 'exec')
        for co in codes(top):
            units = len(co.co_code) // 2
            table = co.co_lnotab if fmt == 'lnotab' else co.co_linetable
            api = api_lines(co, units)
            lines = []
            for i in range(units):
                ln = a2l(co, 2 * i)
                want = api[i]
                if want is None:
                    want = -1
                if ln != want:
                    sys.exit('%s %s unit %d: PyCode_Addr2Line %d, API %r'
                             % (fname, co.co_name, i, ln, api[i]))
                lines.append(ln)
            name = getattr(co, 'co_qualname', co.co_name)
            print('code %s:%s %s %d %d' % (fname, name.replace(' ', '_'), fmt,
                                           co.co_firstlineno, units))
            print('table %s' % (table.hex() or '-'))
            print('lines %s' % ' '.join(str(x) for x in lines))


main()
