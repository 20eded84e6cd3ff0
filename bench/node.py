#!/usr/bin/env python3
# The node rows: heapattach on node (Buffers from 2 workers, small strings): slowdown, drops, --duration 5s, held Buffers.
# SPDX-License-Identifier: MIT
"""For each script of bench/nodealloc.js (buffers, strings) and each of the
default rate and exact mode (--sample-rate 1), prints one row:
  - slowdown: one node process, heapattach attached and detached in turn
    every --cycle seconds for --secs seconds (run.py --interleaved), median
    of (detached rate around / attached rate) and its quartiles;
  - dropped: events heapattach dropped over those attaches;
  - the wall time of `heapattach --duration 5s` on a running script (all
    of it: symbols, attach, 5 s, detach, the profile);
  - buffers only: the profile's inuse_space for the Buffers the script
    holds (one size no other Buffer has) against the bytes it holds, after
    a run in which heapattach saw them all allocated and the script
    collected its garbage.
Needs node (Debian's nodejs) and go (go tool pprof -raw)."""
import argparse, os, re, shutil, signal, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

SCRIPT = os.path.join(run.TOP, "bench", "nodealloc.js")
NODE = shutil.which("node") or shutil.which("nodejs") or "node"


def start(tmp, mode, secs, go=None):
    """The script running MODE for SECS seconds (after GO exists, if given), once ready."""
    out = os.path.join(tmp, "node.out")
    with open(out, "w") as f:
        t = subprocess.Popen([NODE, "--expose-gc", SCRIPT, mode, str(secs)] + ([go] if go else []),
                             stdout=f, stderr=subprocess.STDOUT)
    if not run.wait_line(out, r"^ready", 20, t):
        raise RuntimeError("node did not start: " + open(out).read())
    return t, out


def stop(t):
    t.send_signal(signal.SIGUSR2)
    try:
        t.wait(timeout=10)
    except subprocess.TimeoutExpired:
        t.kill()
        t.wait()


def slowdown(tmp, mode, args, secs, cycle):
    t, out = start(tmp, mode, secs + 5)
    time.sleep(1)
    drops = []
    try:
        r = run.interleave(t, out, secs, cycle, [(run.HA, args)], tmp, drops)[0][0]
    finally:
        stop(t)
    return r, sum(drops)


def duration_wall(tmp, mode, args):
    t, _ = start(tmp, mode, 60)
    time.sleep(1)
    try:
        a = time.monotonic()
        r = subprocess.run([run.HA, "-p", str(t.pid), "-o", os.path.join(tmp, "d.heap"),
                            "--duration", "5s"] + args, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - a
    finally:
        stop(t)
    if r.returncode not in (0, 5):
        raise RuntimeError(r.stderr)
    m = re.search(r"(\d+) events dropped", r.stderr)
    return wall, int(m.group(1)) if m else 0


def inuse_of_size(profile, size):
    """Sum of inuse_space over the samples labelled bytes:[size]."""
    raw = subprocess.run(["go", "tool", "pprof", "-raw", profile], capture_output=True,
                         text=True, check=True).stdout
    total, last = 0, None
    for line in raw.splitlines():
        m = re.match(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+):", line)
        if m:
            last = int(m.group(4))
            continue
        m = re.search(r"bytes:\[(\d+)\]", line)
        if m and last is not None and int(m.group(1)) == size:
            total += last
            last = None
    return total


def held_buffers(tmp, args):
    """(the profile's inuse bytes of the held Buffers, the bytes held)."""
    go = os.path.join(tmp, "go")
    if os.path.exists(go):
        os.unlink(go)
    t, out = start(tmp, "buffers", 4, go)
    err = os.path.join(tmp, "held.err")
    prof = os.path.join(tmp, "held.heap")
    with open(err, "w") as ef:
        p = subprocess.Popen([run.HA, "-p", str(t.pid), "-o", prof] + args, stderr=ef)
    try:
        if not run.wait_line(err, r"attached to", 30, p):
            raise RuntimeError("no attach: " + open(err).read())
        open(go, "w").close()
        m = run.wait_line(out, r"^held (\d+) size (\d+)", 120, t)
        if not m:
            raise RuntimeError("the script did not finish: " + open(out).read())
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        if p.wait(timeout=60) not in (0, 5):
            raise RuntimeError("heapattach failed: " + open(err).read())
    finally:
        stop(t)
    return inuse_of_size(prof, int(m.group(2))), int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=float, default=40, help="seconds of interleaving per row")
    ap.add_argument("--cycle", type=float, default=1.0)
    ap.add_argument("--modes", default="buffers,strings")
    ap.add_argument("--tools", default="default,exact")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ha-node.")
    print("| script | heapattach | slowdown (interleaved median, quartiles) | dropped "
          "| `--duration 5s` wall (dropped) | profile's inuse of the held Buffers / held |")
    print("|---|---|---|---|---|---|")
    try:
        for mode in a.modes.split(","):
            for tool in a.tools.split(","):
                args = ["--sample-rate", "1"] if tool == "exact" else []
                r, dropped = slowdown(tmp, mode, args, a.secs, a.cycle)
                wall, wdrop = duration_wall(tmp, mode, args)
                held = "-"
                if mode == "buffers":
                    got, want = held_buffers(tmp, args)
                    held = "%d / %d (%+.1f%%)" % (got, want, 100.0 * (got - want) / want)
                q = statistics.quantiles(r) if len(r) > 1 else [r[0], r[0], r[0]]
                print("| %s | %s | %.3fx (%.3f-%.3f, %d pairs) | %d | %.2f s (%d) | %s |" %
                      (mode, "default rate 512K" if tool == "default" else "`--sample-rate 1`",
                       statistics.median(r), q[0], q[2], len(r), dropped, wall, wdrop, held),
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
