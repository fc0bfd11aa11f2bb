#!/usr/bin/env python3
# The HTML report in a real browser (headless Chromium, driven through the
# DevTools protocol by tests/lib/cdp.py): `run --html` of the example with
# call stacks, a diff page and a merged report load with no console error
# or exception; the sources table shows the numbers of the JSON report
# (allocated, held, at the peak, temporary), sorts on a click on a column
# and filters as one types; the flame graph zooms on a click and resets,
# and switches to the peak; the timeline marks the peak; the diff page
# shows the change of the one source that changed (with --peak, its change
# at the peak too), and counts the changed sources as the text does.
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, "tests/lib")
from cdp import Browser  # noqa: E402
from tap import ok, is_, run, count, done  # noqa: E402


# The build under test (make test sets BUILD for a flavour; default build/).
BUILD = os.path.abspath(os.environ.get("BUILD", "build"))
MP = BUILD + "/ljmemprof"
TMP = tempfile.mkdtemp(prefix="ljmp-html-")
ENV = dict(os.environ, LUA_CPATH=BUILD + "/?.so;;")

if not shutil.which("chromium"):
    ok(False, "chromium is installed (Debian chromium; make deps)")
    print("1..%d" % count())
    sys.exit(1)

# -- The profiles -----------------------------------------------------------

EX = TMP + "/ex.ljm"
EXH = TMP + "/ex.html"
out = run(MP, "run", "--stacks", "-o", EX, "--html", EXH, "--top", "1", "--",
          "luajit", "-joff", "examples/example.lua", env=ENV)
ok(out is not None and os.path.getsize(EXH) > 0,
   "run --stacks --html: the example's profile and its page")

DLUA = """jit.off(); collectgarbage("stop")
local mp = require("ljmemprof")
local keep = require("table.new")(64, 0)
local n = arg[2] == "new" and 20 or 10
local function f() for i = 1, n do keep[i] = {} end end
local function g() for i = 1, 10 do keep[40 + i] = {} end end
for i = 1, 8 do collectgarbage() end
assert(mp.start(arg[1]))
f()
g()
mp.stop()
"""
with open(TMP + "/d.lua", "w") as f:
    f.write(DLUA)
for side in ("base", "new"):
    run("luajit", "d.lua", side + ".ljm", side, cwd=TMP, env=ENV)
DH = TMP + "/diff.html"
ok(run(MP, "diff", "--format", "html", "-o", DH, TMP + "/base.ljm",
       TMP + "/new.ljm") is not None, "diff --format html")
DPH = TMP + "/diff-peak.html"
ok(run(MP, "diff", "--peak", "--format", "html", "-o", DPH, TMP + "/base.ljm",
       TMP + "/new.ljm") is not None, "diff --peak --format html")
MH = TMP + "/merged.html"
EX2 = TMP + "/ex2.ljm"  # A copy: one file given twice is refused.
shutil.copyfile(EX, EX2)
ok(run(MP, "report", "--format", "html", "-o", MH, EX, EX2) is not None,
   "report --format html of two profiles")


def jreport(*opts):
    return json.loads(run(MP, "report", "--format", "json", *opts, EX))


REP = jreport("--peak", "--temporary")


def by_label(rows, *fields):
    """Sums of fields of rows by source label."""
    out = {}
    for r in rows:
        v = out.setdefault(r["source"]["label"], [0] * len(fields))
        for k, f in enumerate(fields):
            v[k] += r[f]
    return out


def number(s):
    return int(s.replace(",", "")) if s not in ("", None) else None


# Text of the visible rows of a table, cell by cell.
ROWS = ("Array.prototype.map.call(document.querySelectorAll('#%s tr'),"
        "function (tr) { return Array.prototype.map.call(tr.children,"
        "function (td) { return td.textContent; }); })")


def center(page, selector):
    """Scroll the element into view; its centre in the viewport."""
    return page.eval("(function () { var e = document.querySelector(%s);"
                     "e.scrollIntoView({block: 'center'});"
                     "var r = e.getBoundingClientRect();"
                     "return [r.left + r.width / 2, r.top + r.height / 2]; })()"
                     % json.dumps(selector))


def report_page(b):
    p = b.open("file://" + EXH)
    is_(p.problems(), [], "the report loads with no console error or exception")
    is_(p.eval("document.body.getAttribute('data-ready')"), "1",
        "its script ran to the end")
    info = json.loads(run(MP, "info", "--format", "json", EX))
    summ = p.eval("document.getElementById('summary').innerText")
    ok("Peak\t" + format(info["peak"]["bytes"], ",") + " B" in summ and
       "Allocated\t" + format(info["alloc_bytes"], ",") + " B" in summ,
       "the summary shows the allocated bytes and the peak of info",
       summ)
    ok("Call stacks\trecorded, up to 64 frames" in summ,
       "the summary shows the profiler's settings", summ)
    fmt = [x for x in run(MP, "info", EX).splitlines()
           if x.startswith("format:")]
    row = [x for x in summ.splitlines() if x.startswith("Format\t")]
    is_(row, ["Format\t" + fmt[0][len("format:"):].lstrip()] if fmt else [],
        "the Format row says what info says of the versions")

    head = p.eval(ROWS % "sources-head")[0]
    body = p.eval(ROWS % "sources-body")
    col = {name: k for k, name in enumerate(head)}
    html = {}
    for r in body:
        v = html.setdefault(r[0], [0] * len(head))
        for k in range(1, len(head)):
            v[k] += number(r[k])
    alloc = by_label(REP["allocations"] + REP["reallocations"],
                     "alloc_bytes", "events")
    held = by_label(REP["heap_summary"], "bytes")
    peak = by_label(REP["peak_sources"], "bytes", "blocks")
    temp = by_label(REP["temporary_sources"], "bytes", "blocks")
    bad = []
    for label, v in html.items():
        want = (alloc.get(label, [0, 0]) + held.get(label, [0]) +
                peak.get(label, [0, 0]) + temp.get(label, [0, 0]))
        got = [v[col["Allocated B"]], v[col["Allocations"]],
               v[col["Live B at the end"]],
               v[col["B at the peak"]], v[col["Blocks at the peak"]],
               v[col["Temporary B"]], v[col["Temporary blocks"]]]
        if got != want:
            bad.append("%s: %s, json %s" % (label, got, want))
    ok(not bad and len(html) > 5 and set(alloc) <= set(html),
       "the table's %d sources: allocated bytes and events, held, at the "
       "peak, temporary as in the JSON report" % len(body), "\n".join(bad))

    # Sorting: a click on "Allocations", then again.
    x, y = center(p, "#sources-head th:nth-child(%d)" % (col["Allocations"] + 1))
    p.click(x, y)
    vals = [number(r[col["Allocations"]]) for r in p.eval(ROWS % "sources-body")]
    ok(vals == sorted(vals, reverse=True) and vals[0] > vals[-1],
       "a click on the Allocations column sorts by it, largest first", vals)
    p.click(x, y)
    vals = [number(r[col["Allocations"]]) for r in p.eval(ROWS % "sources-body")]
    ok(vals == sorted(vals), "a second click sorts it the other way", vals)

    # Filtering: type into the search field.
    x, y = center(p, "#filter")
    p.click(x, y)
    p.type("EXAMPLE.lua:1")
    rows = p.eval(ROWS % "sources-body")
    want = sorted(l for l in html if "example.lua:1" in l.lower())
    is_(sorted(r[0] for r in rows), want,
        "typing 'EXAMPLE.lua:1' in the filter keeps the %d sources whose "
        "name has it" % len(want))
    ok(p.eval("document.getElementById('sources-note').textContent")
       .startswith("%d of %d sources match" % (len(want), len(body))),
       "the note says how many match")

    # The flame graph: a click zooms, reset, the peak.
    frames = p.eval("Array.prototype.map.call(document.querySelectorAll("
                    "'#flame g.f'), function (g) { var r = g.querySelector("
                    "'rect'); return [+g.getAttribute('data-i'), "
                    "+r.getAttribute('width'), g.textContent]; })")
    ok(frames and frames[0][1] == 1180, "the flame graph's root spans 1180 px",
       frames[:3])
    pick = [f for f in frames if f[0] and 30 < f[1] < 1100]
    ok(pick, "a frame narrower than the root to click on")
    if pick:
        i = pick[0][0]
        x, y = center(p, "#flame g.f[data-i='%d'] rect" % i)
        p.click(x, y)
        z = p.eval("[document.getElementById('flame').getAttribute('data-zoom'),"
                   "document.querySelector(\"#flame g.f[data-i='%d'] rect\")"
                   ".getAttribute('width'), document.querySelectorAll("
                   "'#flame g.anc').length]" % i)
        ok(z[0] == str(i) and z[1] == "1180.00" and z[2] >= 1,
           "a click on a frame zooms on it: it spans the width, its callers "
           "stay under it", z)
        x, y = center(p, "#flame-reset")
        p.click(x, y)
        is_(p.eval("document.getElementById('flame').getAttribute('data-zoom')"),
            "0", "Reset zoom goes back to the root")
    x, y = center(p, "input[name=metric][value='2']")
    p.click(x, y)
    root = p.eval("document.querySelector(\"#flame g.f[data-i='0'] title\")"
                  ".textContent")
    ok(format(sum(v[0] for v in peak.values()), ",") + " bytes live at the peak"
       in root, "the peak's flame graph: its root is what the sources held "
       "at the peak", root)
    mark = p.eval("document.querySelector('#peak-mark text').textContent")
    ok(mark.startswith("peak "), "the timeline marks the peak", mark)
    is_(len(p.eval(ROWS % "temp-body")), len(REP["temporary_sources"]),
        "the temporaries' table has the JSON report's sources")
    is_(p.problems(), [], "no console error or exception after all that")


def diff_page(b):
    p = b.open("file://" + DH)
    is_(p.problems(), [], "the diff page loads with no console error")
    text = run(MP, "diff", TMP + "/base.ljm", TMP + "/new.ljm").splitlines()
    m = re.match(r"(\S+):\n\tallocated +(\d+)B -> (\d+)B \(\+(\d+)B\) in "
                 r"(\d+) -> (\d+) events", text[1] + "\n" + text[2])
    rows = p.eval(ROWS % "sources-body")
    ok(m and len(rows) == 1 and rows[0][0] == m.group(1) and
       [number(c) for c in rows[0][1:7]] == [int(m.group(k)) for k in
                                             (2, 3, 4, 5, 6)] + [10],
       "the diff table: the one source that changed, its numbers as in the "
       "text diff", (rows, text[1]))
    frames = p.eval("Array.prototype.map.call(document.querySelectorAll("
                    "'#flame g.f'), function (g) { return [g.textContent,"
                    "g.querySelector('rect').getAttribute('fill')]; })")
    grew = [f for f in frames if f[0].startswith(m.group(1) + "\n")]
    ok(len(frames) >= 3 and grew and grew[0][1].startswith("hsl(0,"),
       "the diff's flame graph: the source that grew is drawn red", frames)
    is_(p.problems(), [], "no console error on the diff page")


def diff_peak_page(b):
    """With --peak, the table has the change at the peak, and the page
    counts the changed sources as the text does (one definition)."""
    p = b.open("file://" + DPH)
    is_(p.problems(), [], "the diff --peak page loads with no console error")
    text = run(MP, "diff", "--peak", TMP + "/base.ljm",
               TMP + "/new.ljm").splitlines()
    head = p.eval(ROWS % "sources-head")
    rows = p.eval(ROWS % "sources-body")
    peak = [re.match(r"\tat the peak +\d+B -> \d+B \(([-+]\d+)B\)", x)
            for x in text]
    peak = [m.group(1) for m in peak if m]
    ok(head and head[0][-1] == "B at the peak, change" and len(rows) == 1 and
       rows[0][-1] == "+" + format(int(peak[0]), ","),
       "diff --peak page: a column for the change at the peak, the text's",
       (head, rows, peak))
    summ = p.eval("document.getElementById('summary').innerText")
    n = [re.match(r"(\d+) sources? changed, (\d+) did not", x) for x in text]
    n = [m for m in n if m][0]
    ok("Changed sources\t%s (%s unchanged)" % (n.group(1), n.group(2)) in summ,
       "diff --peak page: the changed sources the text counts", (summ, n.groups()))


# A JIT-on stack profile: under a trace's row, its lines with what they
# allocated and what they hold at the end (HEAP SUMMARY's lines).
TLUA = """local cache = {}
local function remember(id, s) cache[id] = { raw = s, n = #s } end
local function gen(i) return ("line %d of the input"):format(i) end
for i = 1, 3000 do remember(i, gen(i)) end
keep = cache
"""
with open(TMP + "/held.lua", "w") as f:
    f.write(TLUA)
TH = TMP + "/held.html"
run(MP, "run", "--stacks", "16", "-o", TMP + "/held.ljm", "--html", TH,
    "held.lua", cwd=TMP, env=ENV)


def trace_page(b):
    p = b.open("file://" + TH)
    is_(p.problems(), [], "a JIT-on stack profile's page loads with no console error")
    rep = json.loads(run(MP, "report", "--format", "json", TMP + "/held.ljm"))
    want = {}
    for r in rep["heap_summary"]:
        for x in r.get("trace_lines", []):
            v = want.setdefault(x["line"], [0, 0])
            v[0] += x["bytes"]
            v[1] += x["blocks"]
    head = p.eval(ROWS % "sources-head")[0]
    col = {name: k for k, name in enumerate(head)}
    got = {}
    for r in p.eval(ROWS % "sources-body"):
        if not r[0].startswith("\u21b3 "):
            continue
        v = got.setdefault(r[0][2:], [0, 0])
        v[0] += number(r[col["Live B at the end"]]) or 0
        v[1] += number(r[col["Live blocks"]]) or 0
    ok(want and got == want,
       "a trace's lines hold at the end what the JSON's HEAP SUMMARY says",
       (got, want))


def merged_page(b):
    p = b.open("file://" + MH)
    is_(p.problems(), [], "a report of two profiles loads with no console error")
    is_(p.eval("document.getElementById('timeline-section').style.display"),
        "none", "a merge has no timeline (the profiles have no common time)")


with Browser(timeout=60) as b:
    for page in (report_page, diff_page, diff_peak_page, merged_page,
                 trace_page):
        try:
            page(b)
        except Exception as e:  # A failure, not a crash of the test.
            ok(False, "%s: no error in the test" % page.__name__, repr(e))

shutil.rmtree(TMP, ignore_errors=True)
done()
