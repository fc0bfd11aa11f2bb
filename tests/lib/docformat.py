#!/usr/bin/env python3
"""A memprof / ljmemprof stream decoder written from docs/FORMAT.md alone
(never from src/format), for tests/format-doc.t: if the page says bytes
the agent does not write, this decoder and the reader disagree.

  docformat.py FILE        one line per allocation event of FILE:
                           kind source node oaddr osize naddr nsize
  docformat.py --fields    the same from `ljmemprof events` JSON lines on
                           standard input
  docformat.py --headers FILE   the three most frequent event headers
"""
import collections
import json
import sys

SOURCES = {0x04: "internal", 0x08: "lua", 0x0c: "cfunc", 0x10: "trace",
           0x14: "stack"}
KINDS = {1: "alloc", 2: "free", 3: "realloc"}
MASK = (1 << 64) - 1


class Stream:
    """The bytes of a stream and a position in them."""

    def __init__(self, data):
        self.d, self.p = data, 0

    def byte(self):
        b = self.d[self.p]
        self.p += 1
        return b

    def uleb(self):
        """ULEB128: 7 bits a byte, least significant first."""
        v = shift = 0
        while True:
            b = self.byte()
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                return v

    def string(self):
        n = self.uleb()
        s = self.d[self.p:self.p + n]
        self.p += n
        return s

    def prologue(self, magic):
        if self.d[self.p:self.p + 3] != magic:
            raise ValueError("no %r prologue at %d" % (magic, self.p))
        ver, minor = self.d[self.p + 3], self.d[self.p + 4]
        self.p += 7
        return ver, minor


def unzigzag(v):
    """Zigzag: 0, 1, 2, 3, ... are 0, -1, 1, -2, ..."""
    return (v >> 1) ^ -(v & 1)


def symbol(s, ver, t):
    """A symbol's payload by its type (the table of the symtab section)."""
    kind = {1: {0: "lua"}, 2: {0: "lua", 1: "trace"},
            3: {0: "lua", 1: "cfunc", 2: "trace"}}[min(ver, 3)][t]
    if kind == "lua":
        s.uleb(), s.string(), s.uleb()
    elif kind == "cfunc":
        s.uleb(), s.string()
    else:
        s.uleb(), s.uleb(), s.uleb()


def decode(data):
    """The allocation events of a stream, as tuples of strings."""
    s = Stream(data)
    ver, _ = s.prologue(b"ljs")
    while True:
        h = s.byte()
        if h == 0x80:
            break
        symbol(s, ver, h & 3)
    ver, _ = s.prologue(b"ljm")
    ext = ver == 0x4c
    last_node = old = new = 0
    out = []
    while True:
        h = s.byte()
        if h == 0x80:
            return out
        if ext and h == 0x00:  # An extended record: type, length, payload.
            s.uleb()
            n = s.uleb()
            s.p += n
            continue
        kind, src = h & 3, h & 0x1c
        if kind == 0:  # A symbol event: 0x08 Lua, 0x0c C, 0x10 trace.
            symbol(s, 3 if ver >= 3 else ver,
                   {0x08: 0, 0x0c: 1, 0x10: 2 if ver >= 3 else 1}[src])
            continue
        node = ""
        if src == 0x08:
            s.uleb(), s.uleb()
        elif src in (0x0c, 0x10):
            s.uleb()
        elif src == 0x14:  # A stack: the node id's difference, zigzag.
            last_node += unzigzag(s.uleb())
            node = str(last_node)
        oaddr = osize = naddr = nsize = 0
        if kind & 2:  # Old address, old size.
            v = s.uleb()
            if ext:
                old = (old + (unzigzag(v) << (3 if h & 0x20 else 0))) & MASK
                v = old
            oaddr, osize = v, s.uleb()
        if kind & 1:  # New address, new size.
            v = s.uleb()
            if ext:
                new = (new + (unzigzag(v) << (3 if h & 0x40 else 0))) & MASK
                v = new
            naddr, nsize = v, s.uleb()
        out.append((KINDS[kind], SOURCES[src], node, str(oaddr), str(osize),
                    str(naddr), str(nsize), "0x%02x" % h))


def main():
    if sys.argv[1] == "--fields":
        for line in sys.stdin:
            e = json.loads(line)
            if e.get("event") in ("alloc", "free", "realloc"):
                print(" ".join([e["event"], e["source"], str(e.get("node", ""))]
                               + [str(e[k]) for k in
                                  ("oaddr", "osize", "naddr", "nsize")]))
        return
    if sys.argv[1] == "--headers":
        evs = decode(open(sys.argv[2], "rb").read())
        top = collections.Counter(e[7] for e in evs).most_common(3)
        print(" ".join(sorted(h for h, _ in top)))
        return
    for e in decode(open(sys.argv[1], "rb").read()):
        print(" ".join(e[:7]))


main()
