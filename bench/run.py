#!/usr/bin/env python3
# Side-by-side slowdown of a malloc-heavy target: unattached vs heapattach, heaptrack -p, gperftools.
# SPDX-License-Identifier: MIT
"""Prints, per tool and thread count, the median over PAIRS interleaved pairs
of (unattached rate / attached rate): 1.00 means no slowdown; and the same
ratio for operations per CPU-second of the target, which does not depend on
how many CPUs the (virtual) machine happened to give the target in a run.
Also prints heapattach's attach and detach times (--attach-times).
With --python PYTHON the target is bench/pyalloc.py, a Python allocation
loop, and heapattach with Python frames (the default) is set beside
--no-python: as tools "default" and "nopython", or, with --interleaved,
both taking the attached stretches of one run in turn."""
import argparse, os, re, shutil, signal, statistics, subprocess, sys, tempfile, time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", os.path.join(TOP, "build"))
HA = os.environ.get("HA", os.path.join(TOP, "heapattach"))
BENCH = [os.path.join(BUILD, "bench", "mallocbench")]   # the target's command (--python: pyalloc.py)
TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
TOOL_CPU = []   # CPU seconds heapattach used, per attached run
DROPS = []      # events each attached run dropped
FAST_RATIOS = []  # interleave(): per variant, the ratios of the stretches' fast_rate
TARGET_ENV = {}  # set in every target's environment (--jit: MALLOCBENCH_JIT)


def wait_line(path, pattern, timeout, proc=None):
    """The first match of pattern in the file at path once there is one;
    None after timeout seconds, or once proc has exited."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            with open(path) as f:
                m = re.search(pattern, f.read(), re.M)
                if m:
                    return m
        except FileNotFoundError:
            pass
        if proc is not None and proc.poll() is not None:
            return None
        time.sleep(0.005)
    return None


def run_target(tmp, threads, secs, env=None, attach=None):
    """Start the target, optionally attach a tool, release it; return ops/s."""
    go = os.path.join(tmp, "go")
    out = os.path.join(tmp, "target.out")
    if os.path.exists(go):
        os.unlink(go)
    with open(out, "w") as f:
        t = subprocess.Popen(BENCH + [str(threads), str(secs), go], stdout=f,
                             stderr=subprocess.STDOUT, env=dict(env or os.environ, **TARGET_ENV))
    if not wait_line(out, r"^ready", 10, t):
        raise RuntimeError("target did not start")
    tool = None
    if attach:
        try:
            tool = attach(t.pid)
        except BaseException:
            t.kill()    # it would wait for the go file for ever
            t.wait()
            raise
    open(go, "w").close()
    if t.wait(timeout=secs * 200 + 120) != 0:
        raise RuntimeError("target failed: " + open(out).read())
    if tool:
        tool()
    m = re.search(r"ops (\d+) secs \S+ rate (\d+) cpu ([\d.]+)", open(out).read())
    return float(m.group(2)), float(m.group(1)) / max(float(m.group(3)), 1e-9)


def heapattach(tmp, args):
    def attach(pid):
        err = os.path.join(tmp, "ha.err")
        ef = open(err, "w")
        p = subprocess.Popen([HA, "-p", str(pid), "-o", os.path.join(tmp, "out.heap")] + args,
                             stderr=ef)
        if not wait_line(err, r"attached to", 30, p):
            raise RuntimeError("heapattach did not attach: " + open(err).read())

        def finish():
            _, status, ru = os.wait4(p.pid, 0)
            p.returncode = os.waitstatus_to_exitcode(status)
            TOOL_CPU.append(ru.ru_utime + ru.ru_stime)
            if p.returncode != 0:
                raise RuntimeError("heapattach failed: " + open(err).read())
            ef.close()
            m = re.search(r"(\d+) events dropped", open(err).read())
            DROPS.append(int(m.group(1)) if m else 0)
            if m:
                sys.stderr.write("note: " + open(err).read())
        return finish
    return attach


def heaptrack_env():
    """heaptrack's environment: bench/gdb-sse first on PATH, so the gdb that
    injects heaptrack's library writes the FP state with PTRACE_SETFPREGS
    (gdb 13 cannot write the XSAVE regset where the kernel's is larger than
    gdb knows, as with AMX: see bench/gdb-sse/gdb)."""
    env = dict(os.environ)
    real = shutil.which("gdb")
    if real:
        env["BENCH_REAL_GDB"] = real
    env["PATH"] = os.path.join(TOP, "bench", "gdb-sse") + os.pathsep + env.get("PATH", "")
    return env


def heaptrack(tmp):
    def attach(pid):
        log = os.path.join(tmp, "ht.out")
        lf = open(log, "w")
        p = subprocess.Popen(["heaptrack", "-p", str(pid)], stdout=lf, stderr=subprocess.STDOUT,
                             cwd=tmp, env=heaptrack_env(), start_new_session=True)
        def stop(why):
            """End heaptrack with its gdb, interpreter and zstd (its process group)."""
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            raise RuntimeError(why + open(log).read())
        if not wait_line(log, r"injection finished", 60, p):
            stop("heaptrack did not attach: ")
        if re.search(r'No symbol "heaptrack_inject"', open(log).read()):
            # gdb could not call into the target (e.g. "Couldn't write extended
            # state status" on newer kernels): heaptrack would wait for ever
            stop("heaptrack -p could not inject: ")

        def finish(kill=False):
            """Wait for heaptrack to write its data; kill=True: end its
            process group instead (its data unused; it can wait for ever
            on its FIFO once the target is gone)."""
            if kill:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            p.wait(timeout=120)
            lf.close()
        return finish
    return attach


def attach_times(rounds, threads):
    """Attach/detach times on a busy THREADS-thread target, as heapattach prints them."""
    tmp = tempfile.mkdtemp(prefix="ha-times.")
    out = os.path.join(tmp, "t.out")
    with open(out, "w") as f:
        t = subprocess.Popen(BENCH + [str(threads), "600"], stdout=f, stderr=subprocess.STDOUT)
    wait_line(out, r"^ready", 10, t)
    att, det = [], []
    try:
        for _ in range(rounds):
            r = subprocess.run([HA, "-p", str(t.pid), "-o", os.path.join(tmp, "x.heap"),
                                "--duration", "200ms"], stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                raise RuntimeError(r.stderr)
            att.append(float(re.search(r"attached to \d+ in ([\d.]+) ms", r.stderr).group(1)))
            det.append(float(re.search(r"detached from \d+ in ([\d.]+) ms", r.stderr).group(1)))
    finally:
        t.kill()
        t.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("attach on a %d-thread busy target: median %.1f ms, max %.1f ms (%d rounds)" %
          (threads, statistics.median(att), max(att), rounds))
    print("detach on a %d-thread busy target: median %.1f ms, max %.1f ms (%d rounds)" %
          (threads, statistics.median(det), max(det), rounds))


def read_windows(out):
    """The target's "w T OPS" or "w T OPS CPU" lines (pyalloc.py: the
    process's CPU seconds) in the file out, as (T, OPS, CPU) tuples."""
    return [(float(m.group(1)), int(m.group(2)), float(m.group(3) or "nan"))
            for m in re.finditer(r"^w (\S+) (\d+)(?: (\S+))?$", open(out).read(), re.M)]


def window_rate(samples, a, b, per=0):
    """Operations per second between times a and b; per=2: per CPU
    second of the target (None where the target does not say)."""
    w = [x for x in samples if a <= x[0] <= b]
    if len(w) < 5 or not w[-1][per] > w[0][per]:
        return None
    return (w[-1][1] - w[0][1]) / (w[-1][per] - w[0][per])


def interleave(t, out, total, cycle, variants, tmp, drops=None):
    """Attach to the running target t (pid t.pid, "w T OPS [CPU]" lines in
    the file out) for `cycle` seconds, stay away for `cycle` seconds, and
    so on for `total` seconds. Each stretch's rate comes from the same
    process (same memory layout, same CPUs): only the machine's own drift
    remains, and consecutive stretches see nearly the same. Returns the
    ratios (mean rate of the detached stretches around an attached one /
    its rate), one list per variant (binary, arguments), by wall-clock and
    by CPU second: the variants take the attached stretches in turn, so
    an old and a new build, or two option sets, see the same process. The
    events each attach dropped are appended to drops (a list), if given."""
    spans = []      # (start, end, binary index or None when detached)
    turn = 0
    end = time.monotonic() + total
    while time.monotonic() + 3 * cycle + 0.5 < end:
        a = time.monotonic()
        time.sleep(cycle)
        spans.append((a + 0.05, time.monotonic(), None))
        err = os.path.join(tmp, "ha.err")
        ef = open(err, "w")
        b = turn % len(variants)
        turn += 1
        p = subprocess.Popen([variants[b][0], "-p", str(t.pid), "-o", os.path.join(tmp, "x.heap"),
                              "--duration", "%gs" % cycle] + variants[b][1], stderr=ef)
        if not wait_line(err, r"attached to", 30, p):
            raise RuntimeError("no attach: " + open(err).read())
        a = time.monotonic()
        if p.wait(timeout=60) != 0:
            raise RuntimeError("heapattach failed: " + open(err).read())
        ef.close()
        if drops is not None:
            m = re.search(r"(\d+) events dropped", open(err).read())
            drops.append(int(m.group(1)) if m else 0)
        spans.append((a + 0.02, a + cycle - 0.05, b))
        time.sleep(0.05)
    a = time.monotonic()
    time.sleep(cycle)
    spans.append((a + 0.05, time.monotonic(), None))
    samples = read_windows(out)

    def rate(a, b, per=0):
        return window_rate(samples, a, b, per)
    # Each attached stretch against the mean of the detached stretches on
    # either side of it: a machine that drifts over the run (other tenants,
    # frequency) cancels out to first order.
    ratios = [[] for _ in variants]
    cpu_ratios = [[] for _ in variants]
    del FAST_RATIOS[:]
    FAST_RATIOS.extend([] for _ in variants)
    for i in range(1, len(spans) - 1, 2):
        for per, out in ((0, ratios), (2, cpu_ratios)):
            before, at, after = (rate(spans[j][0], spans[j][1], per) for j in (i - 1, i, i + 1))
            if before and at and after:
                out[spans[i][2]].append((before + after) / 2 / at)
        before, at, after = (fast_rate(samples, spans[j][0], spans[j][1]) for j in (i - 1, i, i + 1))
        if before and at and after:
            FAST_RATIOS[spans[i][2]].append((before + after) / 2 / at)
    return ratios, cpu_ratios


def fast_rate(samples, a, b):
    """The 80th percentile of the rates of the 100 ms windows between a
    and b: the stretch's speed while the host left it alone. Other
    tenants slow this machine's target by up to 1.5x in spells of 0.1 to
    2 s (seen in 100 ms windows of an unattached run: 6.5 to 10.2 million
    operations a second), which scatter the ratios of whole stretches."""
    bins = []
    t = a
    while t + 0.1 <= b:
        r = window_rate(samples, t, t + 0.1 + 0.001)
        if r:
            bins.append(r)
        t += 0.1
    if len(bins) < 5:
        return None
    bins.sort()
    return bins[int(0.8 * (len(bins) - 1))]


def interleaved(threads, total, cycle, variants):
    """interleave() on one long run of the target (mallocbench or
    pyalloc.py), which prints its operation count every 10 ms."""
    tmp = tempfile.mkdtemp(prefix="ha-inter.")
    out = os.path.join(tmp, "t.out")
    env = dict(os.environ, MALLOCBENCH_WINDOWS="1", **TARGET_ENV)
    with open(out, "w") as f:
        t = subprocess.Popen(BENCH + [str(threads), str(total + 2)], stdout=f,
                             stderr=subprocess.STDOUT, env=env)
    wait_line(out, r"^ready", 10, t)
    time.sleep(0.5)
    r = interleave(t, out, total, cycle, variants, tmp)
    t.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    return r


def duration_wall(threads, secs, extra):
    """Wall seconds of `heapattach --duration SECS` (all of it: symbols,
    attach, SECS, detach, the profile) on a busy THREADS-thread target,
    and the events it dropped."""
    tmp = tempfile.mkdtemp(prefix="ha-dur.")
    out = os.path.join(tmp, "t.out")
    with open(out, "w") as f:
        t = subprocess.Popen(BENCH + [str(threads), str(secs + 30)], stdout=f,
                             stderr=subprocess.STDOUT, env=dict(os.environ, **TARGET_ENV))
    try:
        wait_line(out, r"^ready", 10, t)
        time.sleep(0.5)
        a = time.monotonic()
        r = subprocess.run([HA, "-p", str(t.pid), "-o", os.path.join(tmp, "d.heap"),
                            "--duration", "%gs" % secs] + extra, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - a
        if r.returncode not in (0, 5):
            raise RuntimeError(r.stderr)
        m = re.search(r"(\d+) events dropped", r.stderr)
        return wall, int(m.group(1)) if m else 0
    finally:
        t.kill()
        t.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def against_heaptrack(rounds, threads, secs, extra):
    """heapattach in exact mode and heaptrack -p on the same process: per
    round one run of the target, unattached for SECS seconds, heapattach
    --sample-rate 1 for SECS (then detached), unattached again, then
    heaptrack -p (which cannot detach) for SECS. Each attached stretch is
    measured against the unattached stretch(es) beside it, so the speed of
    a fresh process (which varies by up to 1.7x with 2 threads) cancels.
    Prints each round and the medians of the two slowdowns and of their
    ratio."""
    tmp = tempfile.mkdtemp(prefix="ha-vs.")
    out = os.path.join(tmp, "t.out")
    rows = []
    try:
        for rnd in range(rounds):
            env = dict(os.environ, MALLOCBENCH_WINDOWS="1", **TARGET_ENV)
            with open(out, "w") as f:
                t = subprocess.Popen(BENCH + [str(threads), "600"], stdout=f,
                                     stderr=subprocess.STDOUT, env=env)
            finish = None
            try:
                wait_line(out, r"^ready", 10, t)
                time.sleep(0.5)
                spans = []
                a = time.monotonic()
                time.sleep(secs)
                spans.append((a + 0.05, time.monotonic()))
                finish = heapattach(tmp, ["--sample-rate", "1", "--duration", "%gs" % secs] +
                                    extra)(t.pid)
                a = time.monotonic()
                finish()
                finish = None
                spans.append((a + 0.02, a + secs - 0.05))
                time.sleep(0.05)
                a = time.monotonic()
                time.sleep(secs)
                spans.append((a + 0.05, time.monotonic()))
                finish = heaptrack(tmp)(t.pid)
                a = time.monotonic()
                time.sleep(secs + 0.2)
                spans.append((a + 0.2, time.monotonic()))
                finish(kill=True)
                finish = None
            finally:
                t.kill()
                t.wait()
                if finish:
                    finish()
            samples = read_windows(out)
            before, ha, between, ht = (window_rate(samples, x, y) for x, y in spans)
            if not (before and ha and between and ht):
                print("round %d: too few windows" % rnd, flush=True)
                continue
            rows.append(((before + between) / 2 / ha, between / ht))
            print("round %d: unattached %.0f ops/s, heapattach exact %.2fx, heaptrack -p %.2fx "
                  "(%.2f times heapattach's)" % (rnd, before, rows[-1][0], rows[-1][1],
                                                 rows[-1][1] / rows[-1][0]), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if rows:
        print("threads=%d, same process, %d rounds of %gs stretches: heapattach --sample-rate 1 "
              "%.2fx, heaptrack -p %.2fx; heaptrack's slowdown / heapattach's: median %.2f "
              "(range %.2f..%.2f)" %
              (threads, len(rows), secs, statistics.median(r[0] for r in rows),
               statistics.median(r[1] for r in rows),
               statistics.median(r[1] / r[0] for r in rows),
               min(r[1] / r[0] for r in rows), max(r[1] / r[0] for r in rows)), flush=True)


def jit_rows(threads_list, pairs, secs, extra):
    """The JIT-like rows: per thread count, the median slowdown (fresh
    processes, interleaved pairs) of the loop called directly and through
    the stub side by side, at the default rate and in exact mode; the events
    the default rate dropped through the stub; and the wall time of
    --duration 3s through the stub."""
    tmp = tempfile.mkdtemp(prefix="ha-jit.")
    print("| threads | default rate: direct | through the stub | exact: direct | through the stub "
          "| dropped at the default rate (stub) | `--duration 3s` wall, default / exact (stub) |")
    print("|---|---|---|---|---|---|---|")
    for threads in threads_list:
        med = {}
        dropped = 0
        for tool, args in (("default", []), ("exact", ["--sample-rate", "1"])):
            for jit in (False, True):
                TARGET_ENV.clear()
                if jit:
                    TARGET_ENV["MALLOCBENCH_JIT"] = "1"
                ratios = []
                for _ in range(pairs):
                    base, _ = run_target(tmp, threads, secs)
                    del DROPS[:]
                    r, _ = run_target(tmp, threads, secs, attach=heapattach(tmp, args + extra))
                    ratios.append(base / r)
                    if jit and tool == "default":
                        dropped += sum(DROPS)
                med[tool, jit] = statistics.median(ratios)
        TARGET_ENV["MALLOCBENCH_JIT"] = "1"
        wd, _ = duration_wall(threads, 3, extra)
        we, _ = duration_wall(threads, 3, ["--sample-rate", "1"] + extra)
        TARGET_ENV.clear()
        print("| %d | %.2fx | %.2fx | %.2fx | %.2fx | %d | %.2f s / %.2f s |" %
              (threads, med["default", False], med["default", True], med["exact", False],
               med["exact", True], dropped, wd, we), flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--secs", type=float, default=1.0)
    ap.add_argument("--threads", default=None, help="thread counts (default 1,2; --python: 1)")
    ap.add_argument("--tools", default=None,
                    help="default,exact,nopython,heaptrack,gperftools (default: all but "
                         "nopython; --python: default,nopython)")
    ap.add_argument("--extra", default="", help="extra heapattach arguments")
    ap.add_argument("--interleaved", type=float, default=0, metavar="SECONDS",
                    help="one long run per thread count, heapattach attached and "
                         "detached in turn every --cycle seconds")
    ap.add_argument("--cycle", type=float, default=1.0)
    ap.add_argument("--jit", action="store_true",
                    help="the target calls its allocation loop through a stub in anonymous "
                         "executable memory (no unwind info there), as under a JIT")
    ap.add_argument("--jit-rows", action="store_true",
                    help="the JIT-like rows: direct and through the stub side by side, drops, "
                         "and the wall time of --duration 3s")
    ap.add_argument("--compare", default="", metavar="BINARY[,BINARY...]",
                    help="with --interleaved: other heapattach builds (e.g. the previous "
                         "version) taking the attached stretches of the same run in turn")
    ap.add_argument("--python", default="", metavar="PYTHON",
                    help="the target is bench/pyalloc.py run by this interpreter, a Python "
                         "allocation loop: heapattach with Python frames (the default) "
                         "against --no-python and unattached, side by side")
    ap.add_argument("--against-heaptrack", type=int, default=0, metavar="ROUNDS",
                    help="heapattach --sample-rate 1 and heaptrack -p attached in turn to "
                         "the same process, --secs seconds each, ROUNDS processes")
    ap.add_argument("--attach-times", type=int, default=0, metavar="ROUNDS",
                    help="only measure attach/detach times on a 16-thread target")
    a = ap.parse_args()
    if a.threads is None:
        a.threads = "1" if a.python else "1,2"
    if a.tools is None:
        a.tools = "default,nopython" if a.python else "default,exact,heaptrack,gperftools"
    if a.python:
        BENCH[:] = [a.python, os.path.join(TOP, "bench", "pyalloc.py")]
    if a.jit:
        TARGET_ENV["MALLOCBENCH_JIT"] = "1"
    if a.attach_times:
        attach_times(a.attach_times, 16)
        return
    if a.against_heaptrack:
        for threads in [int(x) for x in a.threads.split(",")]:
            against_heaptrack(a.against_heaptrack, threads, a.secs, a.extra.split())
        return
    if a.jit_rows:
        jit_rows([int(x) for x in a.threads.split(",")], a.pairs, a.secs, a.extra.split())
        return
    if a.interleaved:
        extra = a.extra.split()
        variants = [(HA, extra)] + [(b, extra) for b in a.compare.split(",") if b]
        if a.python:
            variants.append((HA, extra + ["--no-python"]))
        for threads in [int(x) for x in a.threads.split(",")]:
            rs, cpu_rs = interleaved(threads, a.interleaved, a.cycle, variants)
            row = []
            for (b, args), r, cr, fr in zip(variants, rs, cpu_rs, FAST_RATIOS):
                name = "heapattach" if b == HA else b
                if len(r) < 2:
                    print("%s %s threads=%d: too few stretches" % (name, " ".join(args), threads))
                    continue
                print("%s %s threads=%d, interleaved in one run: slowdown %.3fx "
                      "(median of %d pairs; quartiles %.3f..%.3f)" %
                      (name, " ".join(args) or "(default)", threads, statistics.median(r),
                       len(r), statistics.quantiles(r)[0], statistics.quantiles(r)[2]),
                      flush=True)
                if len(fr) >= 2:
                    print("%s %s threads=%d, by each stretch's faster 100 ms windows (80th "
                          "percentile): slowdown %.3fx (quartiles %.3f..%.3f)" %
                          (name, " ".join(args) or "(default)", threads, statistics.median(fr),
                           statistics.quantiles(fr)[0], statistics.quantiles(fr)[2]), flush=True)
                what = ("--no-python" if "--no-python" in args else
                        "Python frames on" if b == HA else name)
                if len(cr) >= 2:
                    print("%s %s threads=%d, per CPU-second of the target: slowdown %.3fx "
                          "(quartiles %.3f..%.3f)" %
                          (name, " ".join(args) or "(default)", threads, statistics.median(cr),
                           statistics.quantiles(cr)[0], statistics.quantiles(cr)[2]), flush=True)
                    row.append("%s %.3fx (per CPU-second %.3fx)" %
                               (what, statistics.median(r), statistics.median(cr)))
                else:
                    row.append("%s %.3fx" % (what, statistics.median(r)))
            if a.python and row:
                print("Python allocation loop (%s), threads=%d, %s: unattached 1.000x | %s"
                      % (a.python, threads, " ".join(extra) or "default rate",
                         " | ".join(row)), flush=True)
        return
    tmp = tempfile.mkdtemp(prefix="ha-bench.")
    extra = a.extra.split()
    rows = []
    for threads in [int(x) for x in a.threads.split(",")]:
        for tool in a.tools.split(","):
            if tool == "heaptrack" and not shutil.which("heaptrack"):
                continue
            if tool == "gperftools" and not os.path.exists(TCMALLOC):
                continue
            ratios, cpu_ratios = [], []
            for _ in range(a.pairs):
                base, base_cpu = run_target(tmp, threads, a.secs)
                if tool == "default":
                    r = run_target(tmp, threads, a.secs, attach=heapattach(tmp, extra))
                elif tool == "nopython":
                    r = run_target(tmp, threads, a.secs,
                                   attach=heapattach(tmp, ["--no-python"] + extra))
                elif tool == "exact":
                    r = run_target(tmp, threads, a.secs,
                                   attach=heapattach(tmp, ["--sample-rate", "1"] + extra))
                elif tool == "heaptrack":
                    r = run_target(tmp, threads, a.secs, attach=heaptrack(tmp))
                else:
                    env = dict(os.environ, LD_PRELOAD=TCMALLOC,
                               HEAPPROFILE=os.path.join(tmp, "gp"))
                    r = run_target(tmp, threads, a.secs, env=env)
                r, r_cpu = r
                ratios.append(base / r)
                cpu_ratios.append(base_cpu / r_cpu)
            label = {"default": "heapattach (default rate 512K)" +
                                (", Python frames" if a.python else ""),
                     "nopython": "heapattach --no-python (rate 512K)",
                     "exact": "heapattach --sample-rate 1",
                     "heaptrack": "heaptrack -p",
                     "gperftools": "gperftools HEAPPROFILE (LD_PRELOAD)"}[tool]
            rows.append((label, threads, statistics.median(ratios),
                         statistics.median(cpu_ratios)))
            print("%-38s threads=%d slowdown %.2fx  per-CPU-second %.2fx  (pairs: %s)" %
                  (label, threads, rows[-1][2], rows[-1][3],
                   " ".join("%.2f/%.2f" % x for x in zip(ratios, cpu_ratios))), flush=True)
    print()
    print("| tool | threads | throughput slowdown | work per CPU-second slowdown |")
    print("|---|---|---|---|")
    for label, threads, med, cmed in rows:
        print("| %s | %d | %.2fx | %.2fx |" % (label, threads, med, cmed))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
