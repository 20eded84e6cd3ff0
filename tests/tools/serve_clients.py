#!/usr/bin/env python3
# Clients of heapattach --listen for tests/integration/serve*.test: a plain GET, a strict /metrics reader, and hostile ones.
# SPDX-License-Identifier: MIT
"""usage: serve_clients.py get URL FILE      the body into FILE; prints the status and headers
       serve_clients.py metrics URL       checks the text exposition, prints "name value" of
                                          the unlabelled series and "sites N"
       serve_clients.py hostile HOST PORT slowloris, oversized heads, garbage, other methods,
                                          bad ?seconds, then a flood of 100 connections while a
                                          normal client must be answered

Exit: 0 as expected, 1 not, 2 usage or connection error.
"""
import random
import re
import select
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

FAILS = []
LOCK = threading.Lock()


def fail(msg):
    with LOCK:
        FAILS.append(msg)
    print("FAIL: " + msg, flush=True)


def say(msg):
    with LOCK:
        print(msg, flush=True)


def get(url, timeout=60):
    """(status, headers, body) of a GET; HTTP errors are answers too."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


# ---- /metrics: text exposition format 0.0.4 ----

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE_RE = re.compile(r"^(" + NAME + r")(\{(.*)\})? (-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?|NaN|[+-]Inf)$")
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,|$)')
NEEDED = ("heapattach_live_bytes", "heapattach_live_objects", "heapattach_allocated_bytes_total",
          "heapattach_sampling_interval_bytes", "heapattach_events_dropped_total")


def parse_labels(text):
    out, pos = {}, 0
    while pos < len(text):
        m = LABEL_RE.match(text, pos)
        if not m:
            raise ValueError("bad labels %r" % text)
        value = m.group(2).replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
        out[m.group(1)] = value
        pos = m.end()
    return out


def metrics(url):
    status, headers, body = get(url)
    if status != 200:
        fail("/metrics: status %d" % status)
        return
    ctype = headers.get("Content-Type", "")
    if not ctype.startswith("text/plain") or "version=0.0.4" not in ctype:
        fail("/metrics: Content-Type %r" % ctype)
    text = body.decode("utf-8")     # must be UTF-8
    if not text.endswith("\n"):
        fail("/metrics: no final newline")
    types, plain, sites, seen = {}, {}, [], set()
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            if typ not in ("gauge", "counter") or name in types:
                fail("/metrics:%d: %r" % (n, line))
            types[name] = typ
            continue
        if line.startswith("# HELP "):
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            fail("/metrics:%d: not a sample: %r" % (n, line))
            continue
        name, labels = m.group(1), parse_labels(m.group(3) or "")
        if name not in types:
            fail("/metrics:%d: %s before its TYPE" % (n, name))
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            fail("/metrics:%d: a second series %r" % (n, key))
        seen.add(key)
        if types.get(name) == "counter" and not name.endswith("_total"):
            fail("/metrics:%d: counter %s without _total" % (n, name))
        if not labels:
            plain[name] = m.group(4)
        if name == "heapattach_site_live_bytes":
            sites.append(labels.get("site", ""))
            if len(labels.get("site", "").encode()) > 120:
                fail("/metrics:%d: a site label past 120 bytes" % n)
    for name in NEEDED:
        if name not in plain:
            fail("/metrics: no %s" % name)
    if len(sites) > 20:
        fail("/metrics: %d sites (at most 20)" % len(sites))
    if 'heapattach_memory_bytes{part="heap"' not in text:
        fail("/metrics: no heap part")
    for name in sorted(plain):
        print(name, plain[name])
    print("sites", len(sites))
    for s in sites:
        print("site", s)


# ---- hostile clients ----

def answer_of(sock, timeout=10):
    """The status of what the server answers on sock, or None (closed, timed out)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            got = sock.recv(4096)
            if not got:
                break
            data += got
    except (socket.timeout, ConnectionError):
        pass
    m = re.match(rb"HTTP/1\.1 (\d{3}) ", data)
    return int(m.group(1)) if m else None


def one_shot(host, port, payload, want, what):
    s = socket.create_connection((host, port), timeout=10)
    try:
        s.sendall(payload)
    except ConnectionError:
        pass
    got = answer_of(s)
    s.close()
    if got != want:
        fail("%s: answered %r, expected %d" % (what, got, want))
    else:
        say("ok %s: %d" % (what, got))


def slowloris(host, port):
    """One header byte a second: the server must cut it at its 10 s head timeout."""
    s = socket.create_connection((host, port), timeout=10)
    t0 = time.monotonic()
    s.sendall(b"GET / HTTP/1.1\r\nX-Slow: ")
    cut = None
    while time.monotonic() - t0 < 30:
        try:
            s.send(b"a")
        except OSError:
            cut = time.monotonic() - t0
            break
        r, _, _ = select.select([s], [], [], 1.0)
        if r:
            try:
                if not s.recv(4096):
                    cut = time.monotonic() - t0
                    break
            except OSError:
                cut = time.monotonic() - t0
                break
    s.close()
    if cut is None:
        fail("slowloris: still connected after 30 s")
    elif cut < 9:
        fail("slowloris: cut after %.1f s, before the 10 s head timeout" % cut)
    else:
        say("ok slowloris: cut after %.1f s" % cut)


def singles(host, port):
    rnd = random.Random(33)
    cases = [
        (b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n", 431, "a 9 KiB header"),
        (b"GET /" + b"a" * 3000 + b" HTTP/1.1\r\n\r\n", 414, "a 3000-byte target"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(rnd.randrange(256) for _ in range(200)),
         400, "a TLS hello"),
        (b"\x00" + bytes(rnd.randrange(256) for _ in range(500)) + b"\r\n\r\n", 400, "garbage"),
        (b"GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 400, "a malformed header"),
        (b"GET / HTTP/2.0\r\n\r\n", 505, "HTTP/2.0"),
        (b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 405, "POST"),
        (b"DELETE /debug/pprof/heap HTTP/1.1\r\n\r\n", 405, "DELETE"),
        (b"GET /nope HTTP/1.1\r\n\r\n", 404, "an unknown path"),
        (b"GET /debug/pprof/heap?seconds=0 HTTP/1.1\r\n\r\n", 400, "seconds=0"),
        (b"GET /debug/pprof/heap?seconds=301 HTTP/1.1\r\n\r\n", 400, "seconds=301"),
        (b"GET /debug/pprof/allocs?seconds=x HTTP/1.1\r\n\r\n", 400, "seconds=x"),
        (b"GET / HTTP/1.0\r\n\r\n", 200, "the index"),
        (b"GET /debug/pprof/ HTTP/1.1\r\n\r\n", 200, "Go's index"),
        (b"GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\n\r\n", 404, "a CPU profile"),
    ]
    for payload, want, what in cases:
        one_shot(host, port, payload, want, what)


def flood(host, port):
    """100 idle connections; a normal client must get its 200 meanwhile."""
    socks = []
    t0 = time.monotonic()
    for _ in range(100):
        try:
            socks.append(socket.create_connection((host, port), timeout=5))
        except OSError as e:
            fail("flood: connect: %s" % e)
            break
    busy = 0
    for s in socks[16:]:
        if answer_of(s, timeout=2) == 503:
            busy += 1
    # past 16 a connection is answered 503, unless it came a second after
    # an idle one, which then gives its place (a slow connect() loop)
    say("flood: %d of %d connections answered 503 at once" % (busy, len(socks)))
    if not busy:
        fail("flood: no connection answered 503")
    t1 = time.monotonic()
    status, got = None, 0
    while time.monotonic() - t1 < 10:
        status, _, body = get("http://%s:%d/metrics" % (host, port), timeout=10)
        got += 1
        if status == 200:
            break
        time.sleep(0.2)     # 503: Retry-After
    dt = time.monotonic() - t1
    if status != 200:
        fail("flood: no 200 in 10 s (last %r)" % status)
    elif dt > 4:
        fail("flood: the normal client waited %.1f s" % dt)
    else:
        say("ok flood: a normal client answered 200 after %.2f s (%d tries)" % (dt, got))
    for s in socks:
        s.close()
    say("flood: %.1f s in all" % (time.monotonic() - t0))


def hostile(host, port):
    th = [threading.Thread(target=slowloris, args=(host, port)),
          threading.Thread(target=singles, args=(host, port))]
    for t in th:
        t.start()
    for t in th:
        t.join()
    flood(host, port)


def main(argv):
    if len(argv) == 3 and argv[0] == "get":
        status, headers, body = get(argv[1])
        open(argv[2], "wb").write(body)
        print("status", status)
        for k, v in headers.items():
            print("%s: %s" % (k, v))
        return 0 if status == 200 else 1
    if len(argv) == 2 and argv[0] == "metrics":
        metrics(argv[1])
    elif len(argv) == 3 and argv[0] == "hostile":
        hostile(argv[1], int(argv[2]))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if FAILS else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except OSError as e:
        print("serve_clients: %s" % e, file=sys.stderr)
        sys.exit(2)
