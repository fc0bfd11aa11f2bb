#!/usr/bin/env python3
# The agent's files call each other without a circle, and its headers
# include each other without one (issue 19): read from the symbols each
# object file defines and uses (nm), and from the #include lines.
import glob, os, re, subprocess, sys

build = os.environ.get("BUILD", "build")
objs = sorted(glob.glob(os.path.join(build, "agent", "agent", "*.o")))
tests = []

def tap(ok, name):
    tests.append((ok, name))

def cycle(edges):
    """A circle in the graph edges (node -> set of nodes), or None."""
    state = {}
    def visit(v, path):
        state[v] = 1
        for w in sorted(edges.get(v, ())):
            if state.get(w) == 1:
                return path[path.index(w):] + [w]
            if w not in state:
                c = visit(w, path + [w])
                if c:
                    return c
        state[v] = 2
        return None
    for v in sorted(edges):
        if v not in state:
            c = visit(v, [v])
            if c:
                return c
    return None

defs, uses = {}, {}
for o in objs:
    f = os.path.basename(o)[:-2]
    out = subprocess.run(["nm", o], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] == "T":
            defs[p[2]] = f
        elif len(p) == 2 and p[0] == "U":
            uses.setdefault(f, set()).add(p[1])
calls = {f: {defs[s] for s in u if s in defs and defs[s] != f}
         for f, u in uses.items()}
srcs = glob.glob("src/agent/*.c")
tap(len(objs) == len(srcs) and len(srcs) > 0,
    "an object for each of the agent's %d files (%d)" % (len(srcs), len(objs)))
tap("mp_sym" in calls.get("mp_stack", ()) and
    "mp_sink" in calls.get("mp_proc", ()),
    "the call graph is read (mp_stack calls mp_sym, mp_proc calls mp_sink)")
c = cycle(calls)
tap(c is None, "no call circle among the agent's files%s" %
    ("" if c is None else ": " + " -> ".join(c)))
tap(not calls.get("mp_proc", set()) - {"mp_sink", "mp_stream"},
    "mp_proc, the process-wide state, calls only the sink: %s" %
    sorted(calls.get("mp_proc", ())))

incs = {}
for h in glob.glob("src/agent/*.h"):
    n = os.path.basename(h)
    for m in re.finditer(r'#include "([^"]+)"', open(h).read()):
        i = os.path.basename(m.group(1))
        if os.path.exists(os.path.join("src/agent", i)):
            incs.setdefault(n, set()).add(i)
tap("mp_sym.h" in incs.get("mp_stack.h", ()), "the include graph is read")
c = cycle(incs)
tap(c is None, "no include circle among the agent's headers%s" %
    ("" if c is None else ": " + " -> ".join(c)))

# One table of error codes: every LJMP_E* code of the public header has
# its row in mp_error.c (message, errno, whether it names the path), and
# the table has no other.
hdr = open("include/ljmemprof.h").read()
codes = set(re.findall(r"#define (LJMP_E[A-Z]+)\s+\(-10\d\d\d\)", hdr))
codes -= {"LJMP_E_BASE"}
rows = set(re.findall(r"\{ (LJMP_E[A-Z]+),", open("src/agent/mp_error.c").read()))
tap(len(codes) >= 12, "the header's error codes are read (%d)" % len(codes))
tap(codes == rows, "each error code has one row in mp_error.c%s" %
    ("" if codes == rows else ": missing %s, extra %s" %
     (sorted(codes - rows), sorted(rows - codes))))

print("1..%d" % len(tests))
for i, (ok, name) in enumerate(tests, 1):
    print("%sok %d - %s" % ("" if ok else "not ", i, name))
sys.exit(0 if all(ok for ok, _ in tests) else 1)
