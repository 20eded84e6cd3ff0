#!/usr/bin/env python3
"""Attaching to many processes at once: -p with a pre-fork server's 64 processes against one.

fixtures/prefork.c runs a master and N-1 idle workers (N 64 by default).
Each run starts heapattach, reads its stderr as it comes and times the
"attached to PID" lines from heapattach's start: first one process (the
master) alone, then all N with one -p list (one session each, forked
from the run), RUNS times each, alternating. Prints the median time to
the first and to the last attach, the ratio of N attaches to one, the
CPU heapattach spent (all its processes) until the last attach, and the
load average. Each run ends with SIGINT once all are attached.
Usage:
    bench/fleet.py [--procs 64] [--runs 3]
"""
import argparse, os, shutil, signal, statistics, subprocess, sys, tempfile, time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HA = os.path.join(TOP, 'heapattach')
VICTIM = os.path.join(TOP, 'build', 'fixtures', 'prefork')


def attach_times(pids, out):
    """Start heapattach -p PIDS; seconds from its start to each attach, and CPU seconds used."""
    t0 = time.monotonic()
    before = os.times()
    p = subprocess.Popen([HA, '-p', ','.join(map(str, pids)), '-o', out, '--duration', '60s'],
                         stderr=subprocess.PIPE, text=True)
    seen = []
    for line in p.stderr:
        if 'attached to ' in line:
            seen.append(time.monotonic() - t0)
            if len(seen) == len(pids):
                break
    p.send_signal(signal.SIGINT)
    for line in p.stderr:
        pass
    p.wait()
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if len(seen) != len(pids):
        sys.exit('only %d of %d attached' % (len(seen), len(pids)))
    return seen, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--procs', type=int, default=64)
    ap.add_argument('--runs', type=int, default=3)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix='ha-fleet.')
    v = subprocess.Popen([VICTIM, d, str(a.procs - 1)], stdout=subprocess.PIPE, text=True)
    try:
        master = int(v.stdout.readline().split()[1])
        wf = os.path.join(d, 'workers')
        while not os.path.exists(wf):
            time.sleep(0.05)
        pids = [master] + [int(x) for x in open(wf).read().split()[1:]]
        one, many, cpus = [], [], []
        for r in range(a.runs):
            s, _ = attach_times([master], os.path.join(d, 'one.heap'))
            one.append(s[0])
            s, cpu = attach_times(pids, os.path.join(d, 'many.heap'))
            many.append((s[0], s[-1]))
            cpus.append(cpu)
        first = statistics.median(m[0] for m in many)
        last = statistics.median(m[1] for m in many)
        o = statistics.median(one)
        print('one process: attached after %.0f ms (median of %d)' % (o * 1e3, a.runs))
        print('%d processes: first attached after %.0f ms, all after %.0f ms (%.1fx one); '
              'heapattach CPU %.2f s (%.0f ms a process)' %
              (len(pids), first * 1e3, last * 1e3, last / o, statistics.median(cpus),
               statistics.median(cpus) / len(pids) * 1e3))
        print('load average: %.1f %.1f %.1f' % os.getloadavg())
    finally:
        open(os.path.join(d, 'exit'), 'w').close()
        v.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == '__main__':
    main()
