"""A store flood: never-repeating 1000-character function names at depth 60.

    py_flood.py SECONDS

Each call chain is 60 functions deep, each function a copy of one code
object under a fresh random name of 1000 characters, so every sample of
it is a stack no store has seen, of 60 names never seen either. The last
200 chains are kept alive, so that their code objects can still be read
when their samples are named. Prints "ready PID", exits SECONDS later.
"""
import collections
import os
import sys
import time
import types

DEPTH = 60
chain = []
keep = collections.deque(maxlen=200)


def spin():
    t = time.monotonic() + 0.002
    while time.monotonic() < t:
        pass


def level(d):
    if d:
        chain[d - 1](d - 1)
    else:
        spin()


def main():
    end = time.monotonic() + float(sys.argv[1])
    code = level.__code__
    print("ready", os.getpid(), flush=True)
    while time.monotonic() < end:
        names = ("f" + os.urandom(500).hex()[:999] for _ in range(DEPTH))
        chain[:] = [types.FunctionType(code.replace(co_name=n, co_qualname=n),
                                       globals()) for n in names]
        keep.append(list(chain))
        chain[DEPTH - 1](DEPTH - 1)


main()
