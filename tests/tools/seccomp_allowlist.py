#!/usr/bin/env python3
# Prints the x86-64 syscall numbers a container engine's seccomp profile (podman's, docker's JSON) allows whatever the arguments and capabilities.
# SPDX-License-Identifier: MIT
"""usage: seccomp_allowlist.py PROFILE.json [UNISTD_64.H]

For fixtures/seccomp's "allowlist:FILE" rule: the shape of an engine's
default profile (an allowlist, every other call failing with an errno)
without its argument checks and capability rules, which only narrow it
further for the calls heapattach does not make.
"""
import json
import re
import sys


def numbers(header):
    nr = {}
    with open(header) as f:
        for line in f:
            m = re.match(r"#define __NR_(\w+)\s+(\d+)", line)
            if m:
                nr[m.group(1)] = int(m.group(2))
    return nr


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    header = sys.argv[2] if len(sys.argv) > 2 else \
        "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"
    nr = numbers(header)
    with open(sys.argv[1]) as f:
        prof = json.load(f)
    if prof.get("defaultAction") != "SCMP_ACT_ERRNO":
        sys.exit("not an allowlist with an errno default: %s" % prof.get("defaultAction"))
    out = set()
    for rule in prof.get("syscalls", []):
        if rule.get("action") != "SCMP_ACT_ALLOW" or rule.get("args"):
            continue
        inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
        if inc.get("caps") or inc.get("minKernel") or exc:
            continue
        if inc.get("arches") and "amd64" not in inc["arches"]:
            continue
        out.update(nr[n] for n in rule.get("names", []) if n in nr)
    if not out:
        sys.exit("no syscall allowed")
    print("\n".join(str(n) for n in sorted(out)))


if __name__ == "__main__":
    main()
