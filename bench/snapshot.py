#!/usr/bin/env python3
"""heapattach snapshot's costs on heaps of a chosen shape (fixtures/heapfill.c).

For each shape (N blocks of SIZE bytes, every tenth leaked) it runs
`heapattach snapshot` on one target, from a copy (the default) and with
--no-fork, side by side, and prints: the target's pause per GiB mapped
for each and their ratio, the bytes of heap read per second, and
heapattach's peak RSS per block. Usage:
    bench/snapshot.py [--shapes 1M:1000,300K:64] [--runs 3]
"""
import argparse, os, re, statistics, subprocess, sys, tempfile, time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HA = os.path.join(TOP, 'heapattach')
FILL = os.path.join(TOP, 'build', 'fixtures', 'heapfill')


def count(s):
    m = {'K': 1000, 'M': 1000000}
    return int(float(s[:-1]) * m[s[-1]]) if s[-1] in m else int(s)


def vsize(pid):
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmSize:'):
                return int(line.split()[1]) * 1024
    return 0


def one(pid, extra, tmp):
    out = os.path.join(tmp, 's.heap')
    p = subprocess.run(['/usr/bin/time', '-f', 'maxrss=%M', HA, 'snapshot', '-p', str(pid),
                        '-o', out] + extra, capture_output=True, text=True)
    if p.returncode:
        sys.exit('heapattach snapshot failed: ' + p.stderr[-2000:])
    rec = dict(kv.split('=') for kv in
               re.search(r'heapattach-snapshot: (.*)', p.stderr).group(1).split())
    rec['maxrss'] = int(re.search(r'maxrss=(\d+)', p.stderr).group(1)) * 1024
    return {k: int(v) for k, v in rec.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--shapes', default='1M:1000,300K:64')
    ap.add_argument('--runs', type=int, default=3)
    a = ap.parse_args()
    print('%-12s %10s %14s %14s %8s %10s %10s' % ('shape', 'mapped', 'pause/GiB copy',
          'pause/GiB stop', 'ratio', 'read GiB/s', 'B/block'))
    for shape in a.shapes.split(','):
        n, size = shape.split(':')
        with tempfile.TemporaryDirectory() as tmp:
            go = os.path.join(tmp, 'go')
            t = subprocess.Popen([FILL, str(count(n)), str(count(size)), go],
                                 stdout=subprocess.PIPE, text=True)
            line = t.stdout.readline()
            if not line.startswith('ready'):
                sys.exit('heapfill did not start')
            mapped = vsize(t.pid)
            copy, stop = [], []
            for _ in range(a.runs):	# interleaved: copy, then stopped
                copy.append(one(t.pid, [], tmp))
                stop.append(one(t.pid, ['--no-fork'], tmp))
            open(go, 'w').close()
            t.wait()
        gib = mapped / 2**30
        pc = statistics.median(r['pause_ns'] for r in copy) / 1e6 / gib
        ps = statistics.median(r['pause_ns'] for r in stop) / 1e6 / gib
        rate = statistics.median(r['bytes'] / (r['scan_ns'] / 1e9) for r in copy) / 2**30
        rss = statistics.median(r['maxrss'] / r['blocks'] for r in copy)
        print('%-12s %8.2fG %12.1fms %12.1fms %7.1fx %10.2f %10.1f' % (
            shape, gib, pc, ps, ps / pc, rate, rss))


if __name__ == '__main__':
    main()
