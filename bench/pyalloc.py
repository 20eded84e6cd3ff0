# Python allocation-loop benchmark target for run.py --python: mallocbench's interface, the work done in Python.
# SPDX-License-Identifier: MIT
"""usage: python pyalloc.py THREADS SECONDS [GOFILE]

Prints "ready PID", waits for GOFILE to exist (if given), runs for SECONDS
and prints "ops N secs S rate R cpu C" (operations per second, all
threads; C = CPU seconds the process used meanwhile), then exits 0, as
bench/mallocbench does. One operation: a Python call chain 8 frames deep
whose leaf replaces one slot of a 1024-slot pool with a new bytearray of
600..4095 bytes (malloc'd, as every bytearray over 512 bytes is) or, one
time in 8, a list of 80..511 pointers; the block's first byte is checked
before it is dropped. With MALLOCBENCH_WINDOWS set it also prints
"w T OPS CPU" every 10 ms or so (CLOCK_MONOTONIC seconds, operations so
far, CPU seconds the process used so far: heapattach's agent runs on the
target's threads, so ops per CPU second show its cost even on a machine
whose other work takes the target's CPU away now and then).
Threads share the GIL: more than one measures contention, not more work.
"""
import os
import sys
import threading
import time

SLOTS = 1024
TOTAL = [0]
BAD = []


def leaf(pool, i, r):
    old = pool[i]
    if old is not None and old[0] != (i & 0x7f):
        BAD.append(i)
    if r & 7 == 0:
        b = [i & 0x7f] * (80 + (r >> 3) % 432)
    else:
        b = bytearray(600 + (r >> 3) % 3496)
        b[0] = i & 0x7f
    pool[i] = b


def op(pool, i, r, depth=7):
    """Calls leaf through depth more frames of its own."""
    if depth:
        op(pool, i, r, depth - 1)
    else:
        leaf(pool, i, r)


def worker(seed, end, windows, stop):
    pool = [None] * SLOTS
    s = seed
    n = 0
    last = time.monotonic()
    while not stop[0]:
        for _ in range(256):
            s ^= (s << 13) & 0xffffffffffffffff
            s ^= s >> 7
            s ^= (s << 17) & 0xffffffffffffffff
            op(pool, s % SLOTS, s >> 20)
        n += 256
        TOTAL[0] += 256
        now = time.monotonic()
        if now >= end:
            stop[0] = True
        if windows and now - last >= 0.01:
            last = now
            print("w %.6f %d %.6f" % (now, TOTAL[0], time.process_time()), flush=True)
    return n


def main(argv):
    threads = int(argv[0]) if argv else 1
    secs = float(argv[1]) if len(argv) > 1 else 2.0
    print("ready %d" % os.getpid(), flush=True)
    if len(argv) > 2:
        while not os.path.exists(argv[2]):
            time.sleep(0.001)
    windows = bool(os.environ.get("MALLOCBENCH_WINDOWS"))
    stop = [False]
    c0 = time.process_time()
    t0 = time.monotonic()
    end = t0 + secs
    ts = [threading.Thread(target=worker, args=(0x9e3779b97f4a7c15 + k, end, False, stop))
          for k in range(1, threads)]
    for t in ts:
        t.start()
    worker(0x9e3779b97f4a7c15, end, windows, stop)
    for t in ts:
        t.join()
    el = time.monotonic() - t0
    cpu = time.process_time() - c0
    print("ops %d secs %.3f rate %d cpu %.3f" % (TOTAL[0], el, TOTAL[0] / el, cpu), flush=True)
    if BAD:
        print("bad: %d blocks changed" % len(BAD), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
