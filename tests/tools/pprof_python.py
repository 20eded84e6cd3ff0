#!/usr/bin/env python3
# Sums a heap profile per Python line (leafmost Python frame of each sample) and checks it against fixtures/py/pytruth.py's truth.
# SPDX-License-Identifier: MIT
"""usage: pprof_python.py [--raw] PROFILE [--min-size N] | [--compare TRUTH
           [--tolerance PCT] [--min-bytes N] [--sites S,..]]
           [--folded | --c-frames SITE,.. | --no-python]
           [--roots] [--leaf-c SITE=F1,F2,..]
       pprof_python.py --self-test

Reads a heap profile through `go tool pprof -raw` (pprof_sites.py's
parser; with --raw PROFILE is that text, "-" stdin). A location line is a
Python frame when its file ends in ".py" or its address is a pseudo-PC of
heapattach's Python frames (>= 0xffe0000000000000). Every sample goes to
its leafmost Python frame (function, file, line), "(no python)" when it
has none. --min-size N counts only samples whose requested size (the
"bytes" label) is at least N.

Without --compare prints one line per Python line:
    alloc_objects alloc_bytes inuse_objects inuse_bytes FUNCTION FILE:LINE

--compare TRUTH (pytruth.py's DIR/truth): judges inuse_space and
alloc_space of every site, counting the samples of its line whose
requested size is the site's BLOCK (the blocks it allocates on purpose,
without the interpreter's own allocations on the same line), "exact" and
"list" kinds alike, within
--tolerance PCT percent (default 0: exact); --min-bytes N judges a metric
only where the truth has at least N bytes (sampled profiles); --sites
restricts the judged sites. Checks that may be added (each judged on the
samples of the truth's sites):
  --folded        no location at all between two Python frames of a
                  sample (the interpreter's C frames there are folded away)
  --c-frames S,.. every sample of these sites has non-Python frames,
                  _PyEval_EvalFrameDefault among them, between its leafmost
                  Python frame and the next one (--python-c-frames keeps them)
  --no-python     the profile has no Python frame at all, and some sample
                  shows _PyEval_EvalFrameDefault (the native stacks)
  --roots         the rootmost Python frame of every sample of a site is
                  the truth's ROOT (the thread's own start: the main
                  module or threading's Thread._bootstrap), and no
                  sample of a site has a Python frame of the other thread's
  --leaf-c S=F,.. the non-Python frames leafward of the leafmost Python
                  frame of every sample of site S hold the functions F, in
                  this order, leaf first (C code called from Python)

Exit: 0 all judged match, 1 a mismatch, 2 usage/parse/pprof error.
Environment: GO (default "go") is the go command used to run pprof.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pprof_sites  # noqa: E402

PC_BASE = 0xffe0000000000000
NONE = ("(no python)", "", 0)
METRICS = ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space")
EVAL = "_PyEval_EvalFrameDefault"


def frames(sample, locs):
    """The sample's frames, leaf first: (function, file, line, is_python).
    A Python frame without a name (pprof's simplification drops "<...>" from
    a name whose system name is the same: "<module>" becomes "") is named
    by its system name, less heapattach's "python:" prefix."""
    out = []
    for lid in sample[1]:
        addr, _, lines = locs[lid]
        for fn, f, ln, sysname in lines:
            py = f.endswith(".py") or addr >= PC_BASE
            if py and not fn and sysname:
                fn = sysname[len("python:"):] if sysname.startswith("python:") else sysname
            out.append((fn or "", f, ln, py))
    return out


def size_of(sample):
    try:
        return int(sample[2].get("bytes", ["0"])[0])
    except ValueError:
        return 0


def leaf_python(fr):
    """Index of the leafmost Python frame of fr, or None."""
    for i, f in enumerate(fr):
        if f[3]:
            return i
    return None


def sum_lines(types, samples, locs, min_size, by_size=False):
    """{(function, file, line): {metric: value}} by leafmost Python frame;
    by_size: {((function, file, line), requested size): {metric: value}}."""
    idx = {t: n for n, t in enumerate(types)}
    sums = {}
    for s in samples:
        if size_of(s) < min_size:
            continue
        fr = frames(s, locs)
        i = leaf_python(fr)
        key = NONE if i is None else fr[i][:3]
        acc = sums.setdefault((key, size_of(s)) if by_size else key, {})
        for m in METRICS:
            if m in idx:
                acc[m] = acc.get(m, 0) + s[0][idx[m]]
    return sums


def read_truth(path):
    """[(site, (function, file, line), block, live, alloc, kind, root)];
    root is (function, file)."""
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            p = line.split()
            if len(p) != 10:
                raise pprof_sites.ParseError("%s:%d: want 10 fields: %r"
                                             % (path, n, line))
            rows.append((p[0], (p[1], p[2], int(p[3])), int(p[4]), int(p[5]),
                         int(p[6]), p[7], (p[8], p[9])))
    if not rows:
        raise pprof_sites.ParseError("%s: no sites" % path)
    return rows


def compare(sums, truth, tol, min_bytes, only):
    """Prints expected vs got per site (sums by_size: the site's blocks);
    returns the number of mismatches."""
    bad = 0
    print("%-11s %-12s %11s %11s  %s" % ("site", "metric", "expected", "got", ""))
    for site, key, block, live, alloc, kind, _ in truth:
        if only is not None and site not in only:
            continue
        got = sums.get((key, block), {})
        for metric, want in (("alloc_space", alloc), ("inuse_space", live)):
            have = got.get(metric, 0)
            if min_bytes and want < min_bytes:
                print("%-11s %-12s %11d %11d  not judged (small)" % (site, metric, want, have))
                continue
            ok = abs(have - want) <= want * tol / 100.0
            note = " (%+.1f%%)" % (100.0 * (have - want) / want) if want else ""
            print("%-11s %-12s %11d %11d  %s%s  %s %s:%d" % (
                site, metric, want, have, "ok" if ok else "MISMATCH", note,
                key[0], os.path.basename(key[1]), key[2]))
            bad += not ok
    return bad


def site_samples(samples, locs, truth):
    """{site: [frames of each sample of the site's block size whose leafmost
    Python frame is the site's]}"""
    by_key = {(row[1], row[2]): row[0] for row in truth}
    out = {row[0]: [] for row in truth}
    for s in samples:
        fr = frames(s, locs)
        i = leaf_python(fr)
        if i is not None and (fr[i][:3], size_of(s)) in by_key:
            out[by_key[(fr[i][:3], size_of(s))]].append(fr)
    return out


def show(fr):
    return " <- ".join("%s%s" % (f[0] or "?", " %s:%d" % (os.path.basename(f[1]), f[2])
                                 if f[3] else "") for f in fr)


def check_folded(per_site):
    bad = 0
    for site, stacks in sorted(per_site.items()):
        for fr in stacks:
            py = [i for i, f in enumerate(fr) if f[3]]
            between = [f for f in fr[py[0]:py[-1] + 1] if not f[3]] if py else []
            if between:
                print("not folded: %s: %d C frames between Python frames (%s): %s"
                      % (site, len(between), ", ".join(f[0] or "?" for f in between), show(fr)))
                bad += 1
                break
    print("folded: %s" % ("no C frame between Python frames" if not bad else
                          "%d sites with C frames between Python frames" % bad))
    return bad


def check_c_frames(per_site, sites):
    bad = 0
    for site in sites:
        stacks = per_site.get(site, [])
        if not stacks:
            print("c-frames: site %s has no samples" % site)
            bad += 1
            continue
        for fr in stacks:
            py = [i for i, f in enumerate(fr) if f[3]]
            if len(py) < 2 or py[1] == py[0] + 1:
                print("c-frames: %s: no C frame between its first two Python frames: %s"
                      % (site, show(fr)))
                bad += 1
                break
            if not any(f[0] == EVAL for f in fr[py[0] + 1:py[1]]):
                print("c-frames: %s: no %s between its first two Python frames: %s"
                      % (site, EVAL, show(fr)))
                bad += 1
                break
        else:
            fr = stacks[0]
            py = [i for i, f in enumerate(fr) if f[3]]
            print("c-frames: %s: kept: %s" % (site, ", ".join(
                f[0] or "?" for f in fr[py[0] + 1:py[1]])))
    return bad


def check_no_python(samples, locs):
    n_py = 0
    n_eval = 0
    for s in samples:
        fr = frames(s, locs)
        n_py += any(f[3] for f in fr)
        n_eval += any(f[0] == EVAL for f in fr)
    print("no-python: %d samples with Python frames, %d with %s" % (n_py, n_eval, EVAL))
    return int(n_py > 0) + int(n_eval == 0)


def check_roots(per_site, truth):
    """The rootmost Python frame of each site's samples is the truth's root,
    and no other root's function appears in them."""
    bad = 0
    roots = set(row[6] for row in truth)
    for site, _, _, _, _, _, root in truth:
        others = roots - {root}
        for fr in per_site.get(site, []):
            py = [f for f in fr if f[3]]
            last = (py[-1][0], py[-1][1])
            alien = [f for f in py if (f[0], f[1]) in others]
            if last != root or alien:
                print("roots: %s: rootmost Python frame %s in %s, want %s in %s%s: %s"
                      % (site, last[0], last[1], root[0], root[1],
                         " (frames of another thread's root)" if alien else "", show(fr)))
                bad += 1
                break
    print("roots: %s" % ("every site's samples end at their thread's root" if not bad
                         else "%d sites wrong" % bad))
    return bad


def check_leaf_c(per_site, spec):
    site, _, want = spec.partition("=")
    want = [w for w in want.split(",") if w]
    stacks = per_site.get(site, [])
    if not stacks:
        print("leaf-c: site %s has no samples" % site)
        return 1
    for fr in stacks:
        i = leaf_python(fr)
        c = [f[0] for f in fr[:i]]
        pos = 0
        for fn in c:
            if pos < len(want) and fn == want[pos]:
                pos += 1
        if pos < len(want):
            print("leaf-c: %s: want %s leafward of the Python frame: %s"
                  % (site, " <- ".join(want), show(fr)))
            return 1
    print("leaf-c: %s: %s <- %s %s:%d (%d samples)" % (
        site, " <- ".join(want), fr[i][0], os.path.basename(fr[i][1]), fr[i][2], len(stacks)))
    return 0


SELF_TEST_RAW = """PeriodType: space bytes
Period: 1
Samples:
alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes
          2     200000          2     200000: 1 2 3 4 5
                bytes:[100000]
          1         64          1         64: 1 2 3 4 5
                bytes:[64]
          1     300000          0          0: 6 7 4 5
                bytes:[300000]
          1      70000          1      70000: 1 8 9 5
                bytes:[70000]
          1      90000          0          0: 1 10
                bytes:[90000]
Locations
     1: 0x1000 M=1 malloc ??:0 s=0
     2: 0xffe0000000000002 M=2 hold /d/pytruth.py:12 s=0
     3: 0x3000 M=1 _PyEval_EvalFrameDefault :0 s=0
             _PyFunction_Vectorcall :0 s=0
     4: 0xffe0000000000003 M=2 main /d/pytruth.py:80 s=0(python:main)
              /d/pytruth.py:90 s=0(python:<module>)
     5: 0x5000 M=1 _start :0 s=0
     6: 0x6000 M=3 cx_inner /d/pycext.c:9 s=0
     7: 0xffe0000000000004 M=2 call_c /d/pytruth.py:40 s=0
     8: 0xffe0000000000005 M=2 Leaker.leak /d/pytruth_leak.py:7 s=0
     9: 0xffe0000000000006 M=2 Thread._bootstrap /usr/lib/threading.py:995 s=0
    10: 0xa000 M=1 _PyEval_EvalFrameDefault :0 s=0
Mappings
1: 0x1000/0x9000/0x0 /x  [FN]
"""
SELF_TEST_TRUTH = [
    ("hold", ("hold", "/d/pytruth.py", 12), 100000, 200000, 200000, "exact",
     ("<module>", "/d/pytruth.py")),
    ("cext", ("call_c", "/d/pytruth.py", 40), 300000, 0, 300000, "exact",
     ("<module>", "/d/pytruth.py")),
    ("leak", ("Leaker.leak", "/d/pytruth_leak.py", 7), 70000, 70000, 70000, "exact",
     ("Thread._bootstrap", "/usr/lib/threading.py")),
]


def self_test():
    types, samples, locs = pprof_sites.parse_raw_detail(SELF_TEST_RAW)
    bad = 0
    sums = sum_lines(types, samples, locs, 65536)
    want = {("hold", "/d/pytruth.py", 12): (2, 200000, 2, 200000),
            ("call_c", "/d/pytruth.py", 40): (1, 300000, 0, 0),
            ("Leaker.leak", "/d/pytruth_leak.py", 7): (1, 70000, 1, 70000),
            NONE: (1, 90000, 0, 0)}
    got = {k: tuple(v[m] for m in METRICS) for k, v in sums.items()}
    if got != want:
        print("sums: got %r\n      want %r" % (got, want))
        bad += 1
    if sum_lines(types, samples, locs, 0)[("hold", "/d/pytruth.py", 12)]["alloc_space"] != 200064:
        print("--min-size 0 does not count the small sample")
        bad += 1
    per = site_samples(samples, locs, SELF_TEST_TRUTH)
    out = sys.stdout
    sys.stdout = open(os.devnull, "w")
    try:
        results = [
            ("compare", compare(sum_lines(types, samples, locs, 0, True),
                                SELF_TEST_TRUTH, 0, 0, None), 0),
            ("folded", check_folded(per), 1),           # hold has the eval frame between
            ("c-frames", check_c_frames(per, ["hold"]), 0),
            ("c-frames leak", check_c_frames(per, ["leak"]), 1),
            ("roots", check_roots(per, SELF_TEST_TRUTH), 0),
            ("leaf-c", check_leaf_c(per, "cext=cx_inner"), 0),
            ("leaf-c missing", check_leaf_c(per, "cext=cx_alloc"), 1),
            ("no-python", check_no_python(samples, locs), 1),
        ]
    finally:
        sys.stdout.close()
        sys.stdout = out
    for name, have, want in results:
        if have != want:
            print("%s: %d, want %d" % (name, have, want))
            bad += 1
    print("pprof_python self-test: %s" % ("FAIL" if bad else "ok"))
    return 1 if bad else 0


def usage(msg=None):
    pprof_sites.usage(msg, "pprof_python", __doc__)


def main(argv):
    raw = False
    prof = truth_path = None
    tol = 0.0
    min_bytes = min_size = 0
    only = None
    checks = []
    args = list(argv)

    def num(opt, conv):
        if not args:
            usage("%s needs a value" % opt)
        try:
            v = conv(args.pop(0))
        except ValueError:
            usage("bad %s" % opt)
        if v < 0:
            usage("bad %s" % opt)
        return v
    while args:
        a = args.pop(0)
        if a == "--raw":
            raw = True
        elif a == "--self-test":
            return self_test()
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a == "--compare":
            if not args:
                usage("--compare needs TRUTH")
            truth_path = args.pop(0)
        elif a == "--tolerance":
            tol = num(a, float)
        elif a == "--min-bytes":
            min_bytes = num(a, int)
        elif a == "--min-size":
            min_size = num(a, int)
        elif a == "--sites":
            if not args:
                usage("--sites needs a list")
            only = set(x for x in args.pop(0).split(",") if x)
        elif a in ("--folded", "--no-python", "--roots"):
            checks.append((a, None))
        elif a in ("--c-frames", "--leaf-c"):
            if not args:
                usage("%s needs a value" % a)
            checks.append((a, args.pop(0)))
        elif a.startswith("--"):
            usage("unknown option %s" % a)
        elif prof is None:
            prof = a
        else:
            usage("one PROFILE only")
    if prof is None:
        usage()
    try:
        types, samples, locs = pprof_sites.parse_raw_detail(
            pprof_sites.read_profile(prof, raw))
        truth = read_truth(truth_path) if truth_path else None
    except (pprof_sites.ParseError, OSError) as e:
        sys.stderr.write("pprof_python: %s\n" % e)
        return 2
    sums = sum_lines(types, samples, locs, min_size)
    if truth is None and not checks:
        for key in sorted(sums, key=lambda k: (k == NONE, k[1], k[2], k[0])):
            v = sums[key]
            print("%d %d %d %d %s %s:%d" % (tuple(v.get(m, 0) for m in METRICS) + key))
        return 0
    if truth is None and any(c[0] != "--no-python" for c in checks):
        usage("these checks need --compare TRUTH")
    bad = 0
    if truth is not None:
        bad += compare(sum_lines(types, samples, locs, 0, True), truth, tol,
                       min_bytes, only)
        per = site_samples(samples, locs, truth)
    for opt, val in checks:
        if opt == "--folded":
            bad += check_folded(per)
        elif opt == "--c-frames":
            bad += check_c_frames(per, [s for s in val.split(",") if s])
        elif opt == "--no-python":
            bad += check_no_python(samples, locs)
        elif opt == "--roots":
            bad += check_roots(per, truth)
        elif opt == "--leaf-c":
            bad += check_leaf_c(per, val)
    print("pprof_python: %s" % ("%d mismatches" % bad if bad else "all match"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
