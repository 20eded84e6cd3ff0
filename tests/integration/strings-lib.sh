# Sourced by tests that look for names in a profile: pprof_strings_ prints a pprof profile's string table.
# SPDX-License-Identifier: MIT

command -v python3 >/dev/null || skip_ "no python3"

# pprof_strings_ PROFILE: the string table of a (gzipped) pprof profile, one a line.
pprof_strings_() {
	gzip -dc "$1" | python3 -c '
import signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
b = sys.stdin.buffer.read()
i = 0
def varint():
    global i
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << s
        s += 7
        if c < 0x80:
            return v
while i < len(b):
    k = varint()
    if k & 7 == 0:
        varint()
    elif k & 7 == 2:
        n = varint()
        if k >> 3 == 6:
            print(b[i:i + n].decode("utf-8", "replace"))
        i += n
    elif k & 7 == 1:
        i += 8
    elif k & 7 == 5:
        i += 4
    else:
        sys.exit(1)'
}
