#!/usr/bin/env python3
# Exact mode at millions of live blocks: drops, heapattach's peak RSS per live block, dump time.
# SPDX-License-Identifier: MIT
"""For each N (and thread count), start build/fixtures/manylive, attach
heapattach -v --sample-rate 1, let the target allocate and keep N blocks of
16..79 bytes, then SIGINT heapattach and print one markdown row: events
dropped, blocks in the profile (inuse_objects of site_keep, through
tests/tools/pprof_sites.py when go is there), heapattach's peak RSS
(VmHWM, sampled every 10 ms until it exits) in MiB and per live block, and
per live block beyond its peak with 1000 blocks (the same run first: its
rings, code, symbols), the final dump's time (heapattach -v), the detach's, the target's
time to allocate while attached, and heapattach's exit code.

--rate 512K runs the same at a sampling rate (the profile's figures are
then estimates, and heapattach's memory follows the sample, not the heap).

usage: bench/scale.py [--sizes 1M,5M,10M] [--threads 1,2] [--runs 1] [--rate 1]"""
import argparse, os, re, shutil, signal, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import wait_line  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", os.path.join(TOP, "build"))
HA = os.environ.get("HA", os.path.join(TOP, "heapattach"))
FIXTURE = os.path.join(BUILD, "fixtures", "manylive")
SITES = os.path.join(TOP, "tests", "tools", "pprof_sites.py")


def vmhwm_kib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            m = re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M)
            return int(m.group(1)) if m else 0
    except (FileNotFoundError, ProcessLookupError):
        return 0


def in_profile(path):
    """inuse_objects of site_keep in the profile, or None without go."""
    if not shutil.which(os.environ.get("GO", "go")):
        return None
    out = subprocess.run([sys.executable, SITES, path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "site_keep":
            return int(f[3])
    return 0


def one(tmp, n, threads, rate):
    go, truth, heap = (os.path.join(tmp, x) for x in ("go", "truth", "out.heap"))
    vout, herr = os.path.join(tmp, "victim.out"), os.path.join(tmp, "ha.err")
    for p in (go, go + ".exit", heap):
        if os.path.exists(p):
            os.unlink(p)
    with open(vout, "w") as f:
        v = subprocess.Popen([FIXTURE, go, truth, str(n), str(threads)], stdout=f,
                             stderr=subprocess.STDOUT)
    h = None
    try:
        if not wait_line(vout, r"^ready", 30, v):
            raise RuntimeError("manylive did not start: " + open(vout).read())
        with open(herr, "w") as f:
            h = subprocess.Popen([HA, "-v", "-p", str(v.pid), "-o", heap, "--sample-rate", rate],
                                 stderr=f, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                           signal.SIG_DFL))
        if not wait_line(herr, r"attached to", 60, h):
            raise RuntimeError("no attach: " + open(herr).read())
        open(go, "w").close()
        done = wait_line(vout, r"^done \d+ \d+ ([\d.]+)", 3600, v)
        if not done:
            raise RuntimeError("manylive not done: " + open(vout).read())
        peak = vmhwm_kib(h.pid)
        h.send_signal(signal.SIGINT)
        while h.poll() is None:
            peak = max(peak, vmhwm_kib(h.pid))
            time.sleep(0.01)
        rc = h.returncode
    finally:
        if h and h.poll() is None:
            h.kill()
            h.wait()
        open(go + ".exit", "w").close()
        try:
            v.wait(timeout=30)
        except subprocess.TimeoutExpired:
            v.kill()
            v.wait()
    err = open(herr).read()
    m = re.search(r"warning: (\d+) events dropped", err)
    drops = int(m.group(1)) if m else 0
    m = re.search(r"debug: wrote %s in ([\d.]+) ms" % re.escape(heap), err)
    dump_ms = float(m.group(1)) if m else float("nan")
    m = re.search(r"detached from \d+ in ([\d.]+) ms", err)
    detach_ms = float(m.group(1)) if m else float("nan")
    got = in_profile(heap)
    return {"n": n, "threads": threads, "drops": drops, "got": got, "peak": peak,
            "dump_ms": dump_ms, "detach_ms": detach_ms, "alloc_s": float(done.group(1)), "rc": rc}


def size(s):
    mul = {"K": 1000, "M": 1000000}.get(s[-1:].upper(), 1)
    return int(float(s[:-1] if mul > 1 else s) * mul)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1M,5M,10M", help="live blocks, comma-separated")
    ap.add_argument("--threads", default="1", help="thread counts, comma-separated")
    ap.add_argument("--runs", type=int, default=1, help="runs of each")
    ap.add_argument("--rate", default="1", help="--sample-rate (default 1: exact)")
    a = ap.parse_args()
    for p in (HA, FIXTURE):
        if not os.access(p, os.X_OK):
            sys.exit("no %s: run make all fixtures" % p)
    print("| live blocks | threads | dropped | in the profile | heapattach peak RSS | "
          "per live block | beyond 1000 blocks' | final dump | detach | target allocating | exit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    tmp = tempfile.mkdtemp(prefix="ha-scale.")
    try:
        for th in (int(x) for x in a.threads.split(",")):
            base = one(tmp, 1000, th, a.rate)["peak"]
            for n in (size(x) for x in a.sizes.split(",")):
                for _ in range(a.runs):
                    r = one(tmp, n, th, a.rate)
                    print("| %d | %d | %d | %s | %.0f MiB | %.0f B | %.0f B | %.0f ms | %.1f ms | %.2f s "
                          "| %d |" % (
                              r["n"], r["threads"], r["drops"],
                              "-" if r["got"] is None else str(r["got"]), r["peak"] / 1024.0,
                              r["peak"] * 1024.0 / r["n"], (r["peak"] - base) * 1024.0 / r["n"],
                              r["dump_ms"], r["detach_ms"], r["alloc_s"], r["rc"]), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
