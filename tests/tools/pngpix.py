#!/usr/bin/env python3
# Decodes a PNG (8-bit gray, RGB or RGBA, not interlaced: what Chromium's screenshots are) into pixels, for tests that look at renderings.
# SPDX-License-Identifier: MIT
"""As a module: img = pngpix.read(path[, rows]); img.pixel(x, y) -> (r, g, b)
(only the first rows rows decoded if given; pixels below read as white).
As a command: pngpix.py FILE X Y prints the pixel at X, Y."""
import struct
import sys
import zlib


class Image:
    def __init__(self, width, height, bpp, rows):
        self.width, self.height, self.bpp, self.rows = width, height, bpp, rows

    def pixel(self, x, y):
        if not (0 <= x < self.width and 0 <= y < len(self.rows)):
            return (255, 255, 255)
        row = self.rows[y]
        p = row[x * self.bpp:(x + 1) * self.bpp]
        if self.bpp == 1:
            return (p[0], p[0], p[0])
        return tuple(p[:3])


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read(path, rows=None):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('not a PNG')
    pos, idat, hdr = 8, b'', None
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b'IHDR':
            hdr = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat += body
        elif kind == b'IEND':
            break
    w, h, depth, ctype, _, _, interlace = hdr
    if depth != 8 or interlace or ctype not in (0, 2, 6):
        raise ValueError('unsupported PNG (depth %d, color type %d)' % (depth, ctype))
    bpp = {0: 1, 2: 3, 6: 4}[ctype]
    raw = zlib.decompress(idat)
    stride = w * bpp
    limit = h if rows is None else min(h, rows)
    rows, prev = [], bytearray(stride)
    for y in range(limit):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                line[i] = (line[i] + _paeth(a, b, c)) & 255
        rows.append(line)
        prev = line
    return Image(w, h, bpp, rows)


if __name__ == '__main__':
    img = read(sys.argv[1])
    print(img.width, img.height, img.pixel(int(sys.argv[2]), int(sys.argv[3])))
