"""Names a process chooses, made to forge folded lines and terminal escapes.

    hostile_names.py SECONDS

The process names itself "A 999999999999\\n" (a folded line of its own,
with a count of 10^12), and runs two threads named with terminal escapes,
each spinning in a function whose qualname and file name hold frame
separators, escapes, a bidirectional override and a lone surrogate.
Prints "ready PID" once its threads run, then exits SECONDS later.
"""
import ctypes
import os
import sys
import threading
import time

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NAME = 15


def set_name(name):
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)


def spin(deadline):
    while time.monotonic() < deadline:
        pass


def forged(qualname, filename):
    """spin's code under another qualname and file name."""
    code = spin.__code__.replace(co_name="spin", co_qualname=qualname,
                                 co_filename=filename)
    return type(spin)(code, globals())


def thread(name, fn, deadline, started):
    set_name(name)
    started.release()
    fn(deadline)


def main():
    deadline = time.monotonic() + float(sys.argv[1])
    set_name(b"A 999999999999\n")
    started = threading.Semaphore(0)
    work = [
        (b"\x1b]0;pwn\x07;x",
         forged("evil;frame\x1b]0;title\x07 999",
                "/tmp/a\nb 12;c\x1b[2J.py")),
        (b"B\x1b[31mred\xc2\x9b",
         forged("rev\u202eesrever\u2028line\udcff", "/tmp/\x7fdel.py")),
    ]
    threads = [threading.Thread(target=thread, args=(n, f, deadline, started))
               for n, f in work]
    for t in threads:
        t.start()
    for _ in threads:
        started.acquire()
    print("ready", os.getpid(), flush=True)
    for t in threads:
        t.join()


main()
