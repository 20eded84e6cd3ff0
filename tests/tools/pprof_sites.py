#!/usr/bin/env python3
# Sums a heap profile per allocation site (innermost site_* frame) via `go tool pprof -raw`, and compares with a truth file.
# SPDX-License-Identifier: MIT
"""usage: pprof_sites.py [--raw] PROFILE [--compare TRUTHFILE [--tolerance PCT]
                                          [--sites S,..] [--metrics M,..]]
       pprof_sites.py --self-test

Runs `go tool pprof -raw PROFILE` (with --raw, PROFILE is already that text;
"-" reads stdin) and attributes every sample to the innermost frame whose
function is a site: its name starts with "site_", allowing the decorations
pprof may show ("main.site_a", "ns::site_new(work*)", "site_x.constprop.0",
mangled "_Z8site_newP4work"). Samples without a site go to "(other)".

Prints one line per site, sorted by name, "(other)" last:
    site_name alloc_objects alloc_bytes inuse_objects inuse_bytes

--compare TRUTHFILE: lines "site_name live_objects live_bytes alloc_objects
alloc_bytes" (fixtures/gtruth*.c). Compares alloc_objects, alloc_bytes,
inuse_objects (vs live_objects) and inuse_bytes (vs live_bytes) of every
truth site, and requires every other site_* in the profile to be all zero.
"(other)" is reported but not judged. --tolerance PCT allows a relative
error of PCT percent (default 0: exact). --sites and --metrics restrict
the judged sites (then other sites are not judged) and metrics
(alloc_objects, alloc_space, inuse_objects, inuse_space), e.g. to judge a
sampled profile only where the sample is large. Prints a table expected
vs got.

Exit: 0 match (or plain listing), 1 mismatch, 2 usage/parse/pprof error.
Environment: GO (default "go") is the go command used to run pprof.
"""
import os
import re
import subprocess
import sys

METRICS = ("alloc_objects", "alloc_space", "inuse_objects", "inuse_space")
OTHER = "(other)"

SAMPLE_RE = re.compile(r"^\s*(-?\d+(?:\s+-?\d+)*)\s*:\s*((?:\d+\s*)*)$")
LOC_RE = re.compile(r"^\s*(\d+): (0x[0-9a-fA-F]+) (.*)$")
# "name file:line s=start" optionally followed by "(system_name)".
LINE_RE = re.compile(r"^(.*) (\S*):(-?\d+) s=(-?\d+)(?:\((.*)\))?$")
LABEL_RE = re.compile(r"^\s{8,}(\w+):\[(.*)\]\s*$")
SITE_RE = re.compile(r"(?:^|::|\.)(site_\w*)")
MANGLED_RE = re.compile(r"^_Z(\d+)")


class ParseError(Exception):
    pass


def site_of(name):
    """Return the site name a pprof function name denotes, or None."""
    if not name:
        return None
    m = MANGLED_RE.match(name)
    if m:
        n = int(m.group(1))
        ident = name[m.end():m.end() + n]
        return ident if ident.startswith("site_") else None
    base = name.split("(", 1)[0]
    m = SITE_RE.search(base)
    return m.group(1) if m else None


def parse_raw(text):
    """Parse `pprof -raw` text. Returns (types, samples, locations):
    types: list of sample type names; samples: list of (values, [locid]);
    locations: {locid: [function name, ...]} innermost line first."""
    types, samples, locs = parse_raw_detail(text)
    return (types, [(values, ids) for values, ids, _ in samples],
            {lid: [ln[0] for ln in loc[2] if ln[0]] for lid, loc in locs.items()})


def loc_line(rest):
    """(function, file, line, system name) of one location line tail (after
    "ID: 0xADDR " and "M=N "); function None when the line names none, file
    "" and line 0 when it has none, system name None unless pprof shows one
    (it does when it differs from the name: pprof's simplification drops
    "<...>" from a name, "<module>" becomes "")."""
    rest = re.sub(r"^\[F\] ", "", rest.rstrip("\n"))
    if rest.strip() in ("", "??"):
        return (None, "", 0, None)
    m = LINE_RE.match(rest)
    if not m:
        return (rest.strip(), "", 0, None)
    return (m.group(1) or None, m.group(2), int(m.group(3)), m.group(5))


def parse_raw_detail(text):
    """Parse `pprof -raw` text, keeping what parse_raw drops. Returns
    (types, samples, locations): samples: list of (values, [locid], labels)
    with labels {key: [value, ...]} ("bytes": the requested size);
    locations: {locid: (address, mapping id or 0, [(function, file, line,
    system name), ...] innermost first)}."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and lines[i].strip() != "Samples:":
        i += 1
    if i + 1 >= len(lines):
        raise ParseError("no 'Samples:' section")
    types = [t.split("/", 1)[0] for t in lines[i + 1].split()]
    if not types:
        raise ParseError("no sample types after 'Samples:'")
    i += 2
    samples = []
    while i < len(lines) and lines[i].strip() != "Locations":
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            lm = LABEL_RE.match(line)
            if lm and samples:
                samples[-1][2].setdefault(lm.group(1), []).extend(
                    x.strip() for x in lm.group(2).split(" ") if x.strip())
                continue        # a label line: "bytes:[32]"
            if samples and re.match(r"^\s+(\d+\s*)+$", line):
                samples[-1][1].extend(int(x) for x in line.split())
                continue        # a continued list of location ids
            raise ParseError("unexpected sample line: %r" % line)
        values = [int(x) for x in m.group(1).split()]
        if len(values) != len(types):
            raise ParseError("sample has %d values for %d types: %r"
                             % (len(values), len(types), line))
        samples.append((values, [int(x) for x in m.group(2).split()], {}))
    if i >= len(lines):
        raise ParseError("no 'Locations' section")
    i += 1
    locs = {}
    cur = None
    while i < len(lines) and lines[i].strip() != "Mappings":
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        m = LOC_RE.match(line)
        if m:
            cur = int(m.group(1))
            rest = m.group(3)
            mm = re.match(r"^M=(\d+) ?", rest)
            rest = rest[mm.end():] if mm else rest
            locs[cur] = (int(m.group(2), 16), int(mm.group(1)) if mm else 0, [])
        elif cur is not None and line.startswith("             "):
            rest = line[13:]     # the name (maybe empty) after 13 spaces
        else:
            raise ParseError("unexpected location line: %r" % line)
        locs[cur][2].append(loc_line(rest))
    for values, ids, _ in samples:
        for lid in ids:
            if lid not in locs:
                raise ParseError("sample refers to unknown location %d" % lid)
    return types, samples, locs


def sum_sites(types, samples, locs):
    """{site: {metric: value}} summed over samples; missing metrics absent."""
    idx = {t: n for n, t in enumerate(types)}
    sums = {}
    for values, ids in samples:
        site = None
        for lid in ids:
            for fn in locs[lid]:
                site = site_of(fn)
                if site:
                    break
            if site:
                break
        acc = sums.setdefault(site or OTHER, {})
        for metric in METRICS:
            if metric in idx:
                acc[metric] = acc.get(metric, 0) + values[idx[metric]]
    return sums


def run_pprof(path):
    go = os.environ.get("GO", "go")
    try:
        p = subprocess.run([go, "tool", "pprof", "-raw", path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
    except OSError as e:
        raise ParseError("cannot run %s tool pprof: %s" % (go, e))
    if p.returncode != 0:
        raise ParseError("go tool pprof -raw %s failed (exit %d): %s"
                         % (path, p.returncode, p.stderr.strip()))
    return p.stdout


def read_truth(path):
    """{site: (live_objects, live_bytes, alloc_objects, alloc_bytes)}"""
    truth = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) != 5:
                raise ParseError("%s:%d: want 5 fields: %r" % (path, n, line))
            truth[parts[0]] = tuple(int(x) for x in parts[1:])
    if not truth:
        raise ParseError("%s: no sites" % path)
    return truth


def fmt(v):
    return "-" if v is None else str(v)


def compare(sums, truth, tol, types, only_sites=None, only_metrics=None, min_bytes=0):
    """Print expected vs got; return the number of mismatches. A site with
    no samples counts as 0 for every metric the profile has (types).
    only_sites/only_metrics: judge just these (None: all). min_bytes > 0
    (sampled profiles): judge only alloc_space where the truth allocated at
    least min_bytes and inuse_space where it holds at least min_bytes."""
    rows = []
    bad = 0
    names = sorted(truth) + sorted(s for s in sums
                                   if s != OTHER and s not in truth)
    if only_sites is not None:
        names = [s for s in names if s in only_sites]
    for site in names:
        live_o, live_b, alloc_o, alloc_b = truth.get(site, (0, 0, 0, 0))
        got = sums.get(site, {})
        for metric, want in (("alloc_objects", alloc_o),
                             ("alloc_space", alloc_b),
                             ("inuse_objects", live_o),
                             ("inuse_space", live_b)):
            if only_metrics is not None and metric not in only_metrics:
                continue
            have = got.get(metric)
            if have is None and metric in types:
                have = 0
            if have is None and site not in truth:
                continue
            ok = have is not None and abs(have - want) <= abs(want) * tol / 100.0
            note = "" if site in truth else " (not in truth)"
            if have is None:
                note = " (metric missing)"
            if min_bytes and (metric.endswith("_objects") or want < min_bytes):
                rows.append((site, metric, fmt(want), fmt(have), "not judged (small)"))
                continue
            if have is not None and want:
                note += " (%+.1f%%)" % (100.0 * (have - want) / want)
            rows.append((site, metric, fmt(want), fmt(have),
                         ("ok" if ok else "MISMATCH") + note))
            if not ok:
                bad += 1
    other = sums.get(OTHER, {})
    for metric in METRICS:
        if metric in other:
            rows.append((OTHER, metric, "-", str(other[metric]), "not judged"))
    w = [max(len(r[k]) for r in rows + [("site", "metric", "expected", "got", "")])
         for k in range(4)]
    print("%-*s  %-*s  %*s  %*s  %s" % (w[0], "site", w[1], "metric",
                                         w[2], "expected", w[3], "got", ""))
    for r in rows:
        print("%-*s  %-*s  %*s  %*s  %s" % (w[0], r[0], w[1], r[1],
                                             w[2], r[2], w[3], r[3], r[4]))
    tolstr = "exact" if tol == 0 else "tolerance %g%%" % tol
    if bad:
        print("pprof_sites: %d mismatches (%s)" % (bad, tolstr))
    else:
        print("pprof_sites: all %d sites match (%s)"
              % (len(set(names) & set(truth)), tolstr))
    return bad


# A hand-made `pprof -raw` text covering the shapes the parser must accept:
# labels, an inlined location (two lines), a folded one, one without lines,
# one without a mapping, an empty function name, demangled and mangled C++.
SELF_TEST_RAW = """PeriodType: space bytes
Period: 1
Time: 2026-01-01 00:00:00 +0000 UTC
Samples:
alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes[dflt]
          2         64          1         32: 1 2 3 
                bytes:[32]
          1        100          0          0: 4 3 
          3         30          3         30: 5 6 
          1         10          1         10: 7 
          4         40          0          0: 8 9 
Locations
     1: 0x1000 M=1 malloc ??:0 s=0
     2: 0x2000 M=1 helper x.c:3 s=0
             site_inl x.c:9 s=0
     3: 0x3000 M=1 main x.c:20 s=0
     4: 0x4000 M=1 [F] main.site_go /x.go:5 s=0
     5: 0x5000 M=1 operator new(unsigned long) :0 s=0(_Znwm)
     6: 0x6000 M=1 site_new(work*) /x.cc:7 s=0(_Z8site_newP4work)
     7: 0x7000 
     8: 0x8000  /usr/include/c++/12/bits/vector.tcc:453 s=0
     9: 0x9000 M=2 _Z11site_vectorP4workRSt6vectorIiSaIiEE ??:0 s=0
Mappings
1: 0x1000/0x9000/0x0 /x  [FN]
2: 0x9000/0xa000/0x0 /y  
"""


def self_test():
    """Check site_of() and the parser on SELF_TEST_RAW; return an exit code."""
    bad = 0
    cases = {"site_a": "site_a", "main.site_a": "site_a",
             "site_x.constprop.0": "site_x", "ns::site_y(int)": "site_y",
             "_Z8site_newP4work": "site_new", "_Z4mainv": None,
             "not_site_a": None, "malloc": None, "": None,
             "std::vector<int>::push_back(int const&)": None}
    for name, want in cases.items():
        if site_of(name) != want:
            print("site_of(%r) = %r, want %r" % (name, site_of(name), want))
            bad += 1
    types, samples, locs = parse_raw(SELF_TEST_RAW)
    got = sum_sites(types, samples, locs)
    want = {"site_inl": {"alloc_objects": 2, "alloc_space": 64,
                         "inuse_objects": 1, "inuse_space": 32},
            "site_go": {"alloc_objects": 1, "alloc_space": 100,
                        "inuse_objects": 0, "inuse_space": 0},
            "site_new": {"alloc_objects": 3, "alloc_space": 30,
                         "inuse_objects": 3, "inuse_space": 30},
            "site_vector": {"alloc_objects": 4, "alloc_space": 40,
                            "inuse_objects": 0, "inuse_space": 0},
            OTHER: {"alloc_objects": 1, "alloc_space": 10,
                    "inuse_objects": 1, "inuse_space": 10}}
    if got != want:
        print("sums: got %r\n      want %r" % (got, want))
        bad += 1
    print("pprof_sites self-test: %s" % ("FAIL" if bad else "ok"))
    return 1 if bad else 0


def usage(msg=None, prog="pprof_sites", doc=__doc__):
    """Says msg and the usage line of doc on stderr; exits 2."""
    if msg:
        sys.stderr.write("%s: %s\n" % (prog, msg))
    sys.stderr.write(doc.split("\n\n")[0] + "\n")
    sys.exit(2)


def read_profile(prof, raw):
    """`pprof -raw` text of the profile at prof; with raw, prof is that text
    already ("-": stdin). Raises ParseError or OSError."""
    if raw:
        return sys.stdin.read() if prof == "-" else open(prof).read()
    return run_pprof(prof)


def main(argv):
    raw = False
    truth_path = None
    tol = 0.0
    prof = None
    only_sites = only_metrics = None
    min_bytes = 0
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--raw":
            raw = True
        elif a == "--compare":
            if not args:
                usage("--compare needs a TRUTHFILE")
            truth_path = args.pop(0)
        elif a == "--tolerance":
            if not args:
                usage("--tolerance needs PCT")
            try:
                tol = float(args.pop(0))
            except ValueError:
                usage("bad --tolerance")
            if tol < 0:
                usage("bad --tolerance")
        elif a == "--min-bytes":
            if not args:
                usage("--min-bytes needs N")
            try:
                min_bytes = int(args.pop(0))
            except ValueError:
                usage("bad --min-bytes")
        elif a in ("--sites", "--metrics"):
            if not args:
                usage("%s needs a list" % a)
            items = set(x for x in args.pop(0).split(",") if x)
            if a == "--sites":
                only_sites = items
            elif items - set(METRICS):
                usage("unknown metric in %s" % ",".join(sorted(items)))
            else:
                only_metrics = items
        elif a == "--self-test":
            return self_test()
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        elif a.startswith("--"):
            usage("unknown option %s" % a)
        elif prof is None:
            prof = a
        else:
            usage("one PROFILE only")
    if prof is None:
        usage()
    try:
        types, samples, locs = parse_raw(read_profile(prof, raw))
        sums = sum_sites(types, samples, locs)
        truth = read_truth(truth_path) if truth_path else None
    except (ParseError, OSError) as e:
        sys.stderr.write("pprof_sites: %s\n" % e)
        return 2
    if truth is not None:
        return 1 if compare(sums, truth, tol, types,
                            only_sites, only_metrics, min_bytes) else 0
    for site in sorted(s for s in sums if s != OTHER) + \
            ([OTHER] if OTHER in sums else []):
        print(site, " ".join(fmt(sums[site].get(m)) for m in METRICS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
