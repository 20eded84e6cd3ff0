#!/usr/bin/env python3
"""heapattach snapshot's costs on heaps of a chosen shape (fixtures/heapfill.c).

For each shape (N blocks of SIZE bytes, every tenth leaked) it starts one
target, times plain fork()s of it (heapfill's own, the kernel's cost of
copying it), then runs `heapattach snapshot -v` on it from a copy (the
default) and, unless --no-stopped, with --no-fork, in turn. It prints:
  scan       the summary's scan_ns: blocks listed, scanned and typed
  read       the blocks' bytes (the summary's bytes: usable bytes of the
             blocks in use) over scan_ns, in GiB/s
  cpu        heapattach's user + system time, the whole run; on a loaded
             machine scan's wall time is several times that; the read
             rate over cpu (marginal) is what an idle machine would show
  list       the part of scan that listed the blocks (-v): the heaps' chain
             walk, which reads every byte of them once; after it the scan
             reads the blocks reached again
  B/block    heapattach's peak RSS (/usr/bin/time) over the blocks
  pause/GiB  the target's pause (pause_ns: every stop, from the seize to
             the detach, and the reap) over its VmSize, from a copy and
             stopped (--no-fork); fork/GiB: a plain fork() of the target
             over the same, and the part of our pause that is the remote
             fork (-v)
and, first, a 10-block target's figures (what a snapshot costs whatever
the heap: symbols and frames of the target; the "marginal" columns take
it off: read over scan minus it, B/block over peak RSS minus it), and
what touching fresh memory costs on this machine now (a 64 MiB
anonymous mapping written one byte a page): on a VM whose host backs a
guest's memory at its first touch, heapattach's own arrays (B/block) cost
more than its reads. Medians over --runs.
With --base BIN, BIN (another heapattach, an older build) runs on the
same targets in turn with this one, a row of its own ("base"): before
and after side by side, on one machine in one run. With --thp the
targets run with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (glibc madvises
its heap MADV_HUGEPAGE: transparent huge pages where THP is "madvise"),
the share of the heap in huge pages said: the pause of a copy of a heap
in huge pages.
Usage:
    bench/snapshot.py [--shapes 300K:1000,1M:64,10M:200] [--runs 3] [--no-stopped]
                      [--base BIN] [--thp]
"""
import argparse, mmap, os, re, statistics, subprocess, sys, tempfile, time

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


def med(rs, f):
    return statistics.median(f(r) for r in rs) if rs else float('nan')


def huge_share(pid):
    """The share of pid's anonymous memory in transparent huge pages."""
    kb = {}
    with open('/proc/%d/smaps_rollup' % pid) as f:
        for line in f:
            k = line.split(':')[0]
            if k in ('Anonymous', 'AnonHugePages'):
                kb[k] = int(line.split()[1])
    return kb.get('AnonHugePages', 0) / max(kb.get('Anonymous', 0), 1)


def one(ha, pid, extra, tmp):
    out = os.path.join(tmp, 's.heap')
    p = subprocess.run(['/usr/bin/time', '-f', 'maxrss=%M cpu=%U+%S', ha, 'snapshot', '-v', '-p', str(pid),
                        '-o', out] + extra, capture_output=True, text=True)
    if p.returncode:
        sys.exit('heapattach snapshot failed: ' + p.stderr[-2000:])
    rec = dict(kv.split('=') for kv in
               re.search(r'heapattach-snapshot: (.*)', p.stderr).group(1).split())
    rec = {k: int(v) for k, v in rec.items()}
    rec['maxrss'] = int(re.search(r'maxrss=(\d+)', p.stderr).group(1)) * 1024
    m = re.search(r'cpu=([0-9.]+)\+([0-9.]+)', p.stderr)
    rec['cpu'] = float(m.group(1)) + float(m.group(2))
    m = re.search(r'fork ([0-9.]+)', p.stderr)
    rec['fork_ms'] = float(m.group(1)) if m else float('nan')
    m = re.search(r'blocks listed in ([0-9.]+) ms', p.stderr)
    rec['list_ns'] = float(m.group(1)) * 1e6 if m else float('nan')
    return rec


def fresh_page_us():
    """Microseconds a fresh 4 KiB page costs at its first write."""
    size = 64 << 20
    m = mmap.mmap(-1, size)
    t0 = time.perf_counter()
    for i in range(0, size, 4096):
        m[i] = 1
    us = (time.perf_counter() - t0) * 1e6 / (size // 4096)
    m.close()
    return us


def run_shape(n, size, runs, forks, stopped, tmp, bins=(HA,), thp=False):
    """One heapfill target, each of bins in turn: ({bin: (copy records,
    stopped records)}, fork_ns, mapped, its share in huge pages)."""
    go = os.path.join(tmp, 'go')
    env = dict(os.environ)
    if thp:
        env['GLIBC_TUNABLES'] = 'glibc.malloc.hugetlb=1'
    t = subprocess.Popen([FILL, str(n), str(size), go, str(forks)],
                         stdout=subprocess.PIPE, text=True, env=env)
    fork_ns = float('nan')
    line = t.stdout.readline()
    if line.startswith('fork_ns'):
        fork_ns = int(line.split()[1])
        line = t.stdout.readline()
    if not line.startswith('ready'):
        sys.exit('heapfill did not start')
    mapped = vsize(t.pid)
    huge = huge_share(t.pid)
    recs = {b: ([], []) for b in bins}
    for _ in range(runs):	# interleaved: each binary, copy then stopped
        for b in bins:
            recs[b][0].append(one(b, t.pid, [], tmp))
            if stopped:
                recs[b][1].append(one(b, t.pid, ['--no-fork'], tmp))
    open(go, 'w').close()
    t.wait()
    return recs, fork_ns, mapped, huge


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--shapes', default='300K:1000,1M:64')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--forks', type=int, default=5, help='plain forks timed')
    ap.add_argument('--no-stopped', action='store_true', help='no --no-fork runs')
    ap.add_argument('--base', help='another heapattach run in turn with this one')
    ap.add_argument('--thp', action='store_true', help="targets' heaps in huge pages")
    a = ap.parse_args()
    bins = (HA, a.base) if a.base else (HA,)
    print('fresh memory: %.1f us a 4 KiB page at its first write' % fresh_page_us())
    with tempfile.TemporaryDirectory() as tmp:
        fixed, _, _, _ = run_shape(10, 64, a.runs, 0, False, tmp, bins)
    fx = {}
    for b in bins:
        base = fixed[b][0]
        fx[b] = (med(base, lambda r: r['scan_ns']), med(base, lambda r: r['maxrss']),
                 med(base, lambda r: r['cpu']))
        print('%sfixed (10 blocks): scan %.2fs, cpu %.2fs, peak RSS %.1f MiB' % (
            'base: ' if b != HA else '', fx[b][0] / 1e9, fx[b][2], fx[b][1] / 2**20))
    print('%-10s %7s %9s %15s %13s %14s %12s | %s' % (
        'shape', 'mapped', 'blocks', 'scan (list)', 'read (marg.)', 'cpu (read/cpu)',
        'B/block (m.)', 'pause/GiB: copy (its fork) / plain fork / stopped'))
    for shape in a.shapes.split(','):
        n, size = shape.split(':')
        with tempfile.TemporaryDirectory() as tmp:
            recs, fork_ns, mapped, huge = run_shape(count(n), count(size), a.runs, a.forks,
                                                    not a.no_stopped, tmp, bins, a.thp)
        if a.thp:
            print('%s: %.0f%% of the heap in huge pages' % (shape, 100 * huge))
        for b in bins:
            row(shape if b == HA else 'base', recs[b], fx[b], fork_ns, mapped)
            sys.stdout.flush()


def row(shape, recs, fixed, fork_ns, mapped):
    """One binary's line for one shape."""
    copy, stop = recs
    fixed_ns, fixed_rss, fixed_cpu = fixed
    gib = mapped / 2**30
    pc = med(copy, lambda r: r['pause_ns']) / 1e6 / gib
    pf = med(copy, lambda r: r['fork_ms']) / gib
    ps = med(stop, lambda r: r['pause_ns']) / 1e6 / gib
    rate = med(copy, lambda r: r['bytes'] / (r['scan_ns'] / 1e9)) / 2**30
    mrate = med(copy, lambda r: r['bytes'] / ((r['scan_ns'] - fixed_ns) / 1e9)) / 2**30
    rss = med(copy, lambda r: r['maxrss'] / r['blocks'])
    mrss = med(copy, lambda r: (r['maxrss'] - fixed_rss) / r['blocks'])
    scan = med(copy, lambda r: r['scan_ns']) / 1e9
    lst = med(copy, lambda r: r['list_ns']) / 1e9
    blocks = copy[0]['blocks']
    cpu = med(copy, lambda r: r['cpu'])
    crate = med(copy, lambda r: r['bytes'] / max(r['cpu'] - fixed_cpu, 0.01)) / 2**30
    print('%-10s %6.2fG %9d %6.2fs (%5.2fs) %4.2f (%4.2f)G/s %5.2fs (%4.2fG/s) %5.1f (%4.1f) | '
          '%5.1f ms (%4.1f) / %4.1f ms / %.0f ms'
          % (shape, gib, blocks, scan, lst, rate, mrate, cpu, crate, rss, mrss, pc, pf,
             fork_ns / 1e6 / gib, ps))
    sys.stdout.flush()


if __name__ == '__main__':
    main()
