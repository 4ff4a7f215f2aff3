#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Test vectors for the shipper's Python line tables (shipper/stacks/python.c).

Run under one CPython 3.8-3.13: compiles the samples below and prints, for every code object
they hold, a C initializer of struct pyl_vector (tests/unit/pylines_vectors.h): the version,
the code's first line, its line table as the frame reader sends it (co_lnotab before 3.10,
co_linetable from 3.10) and, for every 2-byte code unit of its bytecode, the line CPython itself
gives that byte offset: PyCode_Addr2Line called through ctypes, the function frame.f_lineno
uses (-1: no line). Where the version has them, co_lines() (3.10+) and co_positions() (3.11+)
are checked to agree, so the vectors hold what dis shows too.

Regenerate (from the repository's root):
    tests/tools/pylines_vectors.sh > tests/unit/pylines_vectors.h
"""
import ctypes
import sys
import types

SAMPLES = []

SAMPLES.append(('basic', '''
def simple(a, b):
    c = a + b
    d = c * 2
    return d

def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            total += i
        elif i % 3 == 1:
            total -= 1
        else:
            continue
    while total > 100:
        total //= 2
    return total

def multiline_call(x):
    return max(
        x,
        3,
        key=lambda v: (
            v
            * 2
        ),
    )

def exceptions(path):
    try:
        f = open(path)
    except OSError as e:
        return str(e)
    except (ValueError,
            TypeError):
        raise
    else:
        with f:
            data = f.read()
    finally:
        path = None
    return data

def comprehensions(xs):
    a = [x * 2 for x in xs if x]
    b = {x: y
         for x, y in zip(xs, xs)}
    c = (x for x in xs)
    return a, b, list(c)

def gen(n):
    for i in range(n):
        yield i
    yield from range(n)

async def coro(x):
    await x
    async with x as y:
        async for z in y:
            pass
    return 1

class Outer:
    class Inner:
        def method(self):
            return [self
                    for _ in range(3)]

    @staticmethod
    def deco(
        a,
        b=1,
    ):
        assert a, (
            "message"
        )
        return a if b else (
            b)
'''))

# A statement far below the one before it, and back: line deltas past a byte, both ways.
_far = ['def far(a):', '    x = a']
_far += ['    # filler'] * 300
_far += ['    y = x + 1', '    if y:', '        return (x,']
_far += ['            ' + '# filler'] * 200
_far += ['            y)', '    return None']
SAMPLES.append(('far', '\n'.join(_far) + '\n'))

# Much bytecode on one line: address deltas past a byte.
SAMPLES.append(('long', 'def long(a):\n    r = [' + ', '.join('a + %d' % i for i in range(300))
                + ']\n    return r\n'))

# A function deep in a large file: a first line past 65535.
SAMPLES.append(('deep', '\n' * 70000 + '''
def deep(a):
    b = a
    return b
'''))

addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int


def codes(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from codes(c)


def expected_lines(co):
    nbytes = len(co.co_code)
    lines = [addr2line(co, off) for off in range(0, nbytes, 2)]
    if hasattr(co, 'co_lines'):
        for start, end, line in co.co_lines():
            for off in range(start, end, 2):
                want = -1 if line is None else line
                assert lines[off // 2] == want, (co, off, lines[off // 2], want)
    if hasattr(co, 'co_positions'):
        for i, pos in enumerate(co.co_positions()):
            want = -1 if pos[0] is None else pos[0]
            assert lines[i] == want, (co, i, lines[i], want)
    return lines


def c_bytes(b):
    return '"' + ''.join('\\x%02x' % x for x in b) + '"'


def main():
    v = sys.version_info
    version = v.major << 8 | v.minor
    print('/* CPython %d.%d.%d */' % (v.major, v.minor, v.micro))
    for sample, src in SAMPLES:
        top = compile(src, '%s.py' % sample, 'exec')
        for co in codes(top):
            table = co.co_lnotab if v < (3, 10) else co.co_linetable
            lines = expected_lines(co)
            name = getattr(co, 'co_qualname', co.co_name)
            print('{ 0x%04x, "%s:%s", %d, %s, %d, (const int32_t[]){ %s }, %d },' % (
                version, sample, name.replace('<', '[').replace('>', ']'),
                co.co_firstlineno, c_bytes(table), len(table),
                ', '.join(str(x) for x in lines), len(lines)))


if __name__ == '__main__':
    main()
