#!/usr/bin/env python3
"""The cost of serving a scrape of --listen on a large profile (fixtures/manystacks.c).

For each size (2^BITS blocks, each from a stack of its own: a profile of
that many samples) it attaches heapattach --sample-rate 1 --listen 0 to
one target, lets it allocate, then scrapes /debug/pprof/heap and /metrics
RUNS times each and prints, per endpoint: the wall time of a scrape
(median, max), the answer's bytes, and heapattach's CPU per scrape (all
its threads, from /proc). The session's thread makes each answer between
two drains of the rings: its time is what a scrape holds the drain up.
The profile's caps (profile.h: 2^17 stacks, 2^20 frames in all) bound
what a scrape can cost: BITS 16 and more (stacks of BITS + 5 frames)
reach the frame cap, past which new stacks count under an empty one.
Usage:
    bench/serve.py [--bits 17,14] [--runs 5]
"""
import argparse, os, statistics, subprocess, sys, tempfile, time, urllib.request

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HA = os.path.join(TOP, 'heapattach')
VICTIM = os.path.join(TOP, 'build', 'fixtures', 'manystacks')
TICK = os.sysconf('SC_CLK_TCK')


def wait_for(path, text, secs):
    t0 = time.monotonic()
    while time.monotonic() - t0 < secs:
        if os.path.exists(path) and text in open(path).read():
            return open(path).read()
        time.sleep(0.05)
    sys.exit('no %r in %s after %d s' % (text, path, secs))


def cpu_s(pid):
    f = open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def scrape(url, pid, runs):
    walls, cpus, size = [], [], 0
    for _ in range(runs):
        c0, t0 = cpu_s(pid), time.monotonic()
        with urllib.request.urlopen(url, timeout=300) as r:
            size = len(r.read())
        walls.append(time.monotonic() - t0)
        cpus.append(cpu_s(pid) - c0)
    return statistics.median(walls), max(walls), size, statistics.median(cpus)


def one(bits, runs, tmp):
    tmp = os.path.join(tmp, str(bits))
    os.mkdir(tmp)
    go, out, err = (os.path.join(tmp, n) for n in ('go', 'victim.out', 'ha.err'))
    v = subprocess.Popen([VICTIM, go, str(bits)], stdout=open(out, 'w'))
    wait_for(out, 'ready', 10)
    h = subprocess.Popen([HA, '-p', str(v.pid), '-o', os.path.join(tmp, 'out.heap'),
                          '--sample-rate', '1', '--listen', '0'], stderr=open(err, 'w'))
    try:
        text = wait_for(err, 'attached to', 60)
        addr = text.split('listening on http://', 1)[1].split('/', 1)[0]
        open(go, 'w').close()
        wait_for(out, 'done', 600)
        for path in ('/debug/pprof/heap', '/metrics'):
            med, worst, size, cpu = scrape('http://%s%s' % (addr, path), h.pid, runs)
            print('%-8d %-18s %8.1f %8.1f %10d %8.1f' % (1 << bits, path, med * 1e3, worst * 1e3,
                                                         size, cpu * 1e3), flush=True)
    finally:
        h.send_signal(2)
        h.wait()
        open(go + '.exit', 'w').close()
        v.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--bits', default='17,14')
    ap.add_argument('--runs', type=int, default=5)
    a = ap.parse_args()
    for p in (HA, VICTIM):
        if not os.access(p, os.X_OK):
            sys.exit('no %s: make all fixtures' % p)
    print('%-8s %-18s %8s %8s %10s %8s' % ('stacks', 'endpoint', 'ms med', 'ms max', 'bytes',
                                          'cpu ms'))
    with tempfile.TemporaryDirectory() as tmp:
        for bits in (int(b) for b in a.bits.split(',')):
            one(bits, a.runs, tmp)


if __name__ == '__main__':
    main()
