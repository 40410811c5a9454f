"""Python workloads with known call chains, for tests/bats/python.bats.

    py_chain.py MODE SECONDS

Each prints "ready PID", waits for SIGUSR1 (so a capture can attach
first), prints "thread NAME TID" for each thread it starts, and exits
SECONDS later. Modes:

  chain    handler -> parse -> compute_hot, on CPU nearly all the time
  split    serve -> route -> compute_hot for 3 requests of 4, compute_cold
           for the fourth; prints the CPU time it spent in each at the end,
           "hot_ns N cold_ns M", the truth for their shares
  cext     hash_data -> hashlib (C, in libcrypto), the GIL released
  offcpu   sleep_here: time.sleep; wait_sock: recv on a socket, one thread
           each
  threads  spin_a and spin_b hold the GIL in turns, hash_c releases it
  exec     before_exec for half the time, then execs into after_exec
  after    (what exec runs) after_exec
  loop     corrupted: its frame's previous pointer made to point at
           itself, so the chain never ends
  garbage  corrupted: its frame's previous pointer made to point at
           unmapped memory
"""
import ctypes
import gc
import hashlib
import os
import signal
import socket
import sys
import threading
import time


def compute_hot(n):
    total = 0
    for i in range(n):  # hot-for
        total += i * i % 7  # hot-body
    return total


def parse(n):
    return compute_hot(n)  # parse-compute


def handler(deadline):
    while time.monotonic() < deadline:
        parse(20000)  # handler-parse


def compute_cold(n):
    total = 0
    for i in range(n):  # cold-for
        total += i * i % 5  # cold-body
    return total


def route(i, spent):
    t0 = time.thread_time_ns()
    if i % 4:
        compute_hot(5000)  # route-hot
        spent[0] += time.thread_time_ns() - t0
    else:
        compute_cold(5000)  # route-cold
        spent[1] += time.thread_time_ns() - t0


def serve(deadline):
    spent, i = [0, 0], 0
    while time.monotonic() < deadline:
        route(i, spent)  # serve-route
        i += 1
    print("hot_ns", spent[0], "cold_ns", spent[1], flush=True)


def hash_data(deadline):
    data = b"x" * (1 << 20)
    while time.monotonic() < deadline:
        hashlib.sha256(data).digest()  # hash-call


def sleep_here(deadline):
    while time.monotonic() < deadline:
        time.sleep(0.02)  # sleep-call


def wait_sock(deadline):
    a, b = socket.socketpair()
    a.settimeout(0.02)
    while time.monotonic() < deadline:
        try:
            a.recv(1)  # recv-call
        except socket.timeout:
            pass


def spin_a(deadline):
    while time.monotonic() < deadline:
        compute_hot(5000)


def spin_b(deadline):
    while time.monotonic() < deadline:
        compute_hot(5000)


def hash_c(deadline):
    hash_data(deadline)


def before_exec(deadline):
    handler(deadline)


def after_exec(deadline):
    handler(deadline)


def corrupted(deadline, how):
    # the pointer to this frame's caller: 3.9 and 3.10, the frame object's
    # f_back (at 24); 3.11+, the previous pointer of the
    # _PyInterpreterFrame behind it (the frame object's f_frame, at 24),
    # at 48 in 3.11, 8 from 3.12 on
    gc.disable()  # the collector would follow the broken pointer
    frame = id(sys._getframe())
    if sys.version_info < (3, 11):
        this, at = frame, frame + 24
    else:
        this = ctypes.c_void_p.from_address(frame + 24).value
        at = this + (48 if sys.version_info < (3, 12) else 8)
    prev = ctypes.c_void_p.from_address(at)
    prev.value = this if how == "loop" else 0x10
    while time.monotonic() < deadline:  # spin-corrupted
        pass
    # returning would follow the broken pointer
    sys.stdout.flush()
    os._exit(0)


def threads(deadline, *targets):
    ts = [threading.Thread(target=t, args=(deadline,), name=t.__name__)
          for t in targets]
    for t in ts:
        t.start()
    for t in ts:
        while t.native_id is None:
            time.sleep(0.001)
        print("thread", t.name, t.native_id, flush=True)
    return ts


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])
    if mode != "after":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
        print("ready", os.getpid(), flush=True)
        signal.sigwait({signal.SIGUSR1})
    deadline = time.monotonic() + seconds
    if mode == "chain":
        handler(deadline)  # main-chain
    elif mode == "split":
        serve(deadline)
    elif mode == "cext":
        hash_data(deadline)
    elif mode in ("offcpu", "threads"):
        targets = (sleep_here, wait_sock) if mode == "offcpu" else \
            (spin_a, spin_b, hash_c)
        for t in threads(deadline, *targets):
            t.join()
    elif mode == "exec":
        before_exec(time.monotonic() + seconds / 2)
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, __file__, "after",
                                  str(seconds / 2)])
    elif mode == "after":
        after_exec(deadline)
    elif mode in ("loop", "garbage"):
        corrupted(deadline, mode)
    else:
        sys.exit("py_chain.py: unknown mode " + mode)


if __name__ == "__main__":
    main()
