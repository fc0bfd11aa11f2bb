#!/usr/bin/env python3
# The HTML report's reading order at 1280x800 in headless Chromium (the
# DevTools protocol, tests/lib/cdp.py): the page opens with the summary
# and the flame graph in the first viewport (read from the elements'
# geometry, and a screenshot of that viewport taken), the table of
# sources below it, 50 rows at first and 50 more a click; no page (a
# report with long labels, a diff) scrolls sideways at 1280 px; the diff
# page says as many sources changed as the text diff; the table has a
# Tarantool column only with --accounting tarantool, as the JSON says.
import json
import os
import re
import shutil
import struct
import sys
import tempfile
import base64

sys.path.insert(0, "tests/lib")
from cdp import Browser  # noqa: E402
from tap import ok, is_, run, count, done  # noqa: E402


BUILD = os.path.abspath(os.environ.get("BUILD", "build"))
MP = BUILD + "/ljmemprof"
TMP = tempfile.mkdtemp(prefix="ljmp-layout-")
ENV = dict(os.environ, LUA_CPATH=BUILD + "/?.so;;")

if not shutil.which("chromium"):
    ok(False, "chromium is installed (Debian chromium; make deps)")
    print("1..%d" % count())
    sys.exit(1)

# The example with call stacks; a program of 120 sources under a long
# directory name; two runs of one program for a diff.
EXH = TMP + "/ex.html"
ok(run(MP, "run", "--stacks", "-o", TMP + "/ex.ljm", "--html", EXH, "--",
       "luajit", "-joff", "examples/example.lua", env=ENV) is not None,
   "run --stacks --html of the example")
LONG = TMP + "/" + "/".join(["a-rather-long-directory-name-%d" % i
                             for i in range(6)])
os.makedirs(LONG)
with open(LONG + "/many.lua", "w") as f:
    f.write("jit.off()\nkeep = {}\n")
    for i in range(120):
        f.write("keep[#keep + 1] = { %d } -- line %d\n" % (i, i + 3))
MH = TMP + "/many.html"
ok(run(MP, "run", "--top", "0", "--html", MH, "many.lua", cwd=LONG,
       env=ENV) is not None, "run --html of a program of 120 lines")
with open(TMP + "/d.lua", "w") as f:
    f.write("jit.off()\nlocal keep = {}\nlocal n = arg[1] == 'new' and 20 or 10\n"
            "for i = 1, n do keep[i] = {} end\n"
            "for i = 1, 10 do keep[40 + i] = { i } end\n")
for side in ("base", "new"):
    run(MP, "run", "-o", TMP + "/" + side + ".ljm", "d.lua", side, cwd=TMP,
        env=ENV)
# A recursion 60 calls deep, recorded with 64 frames: a tall flame graph.
with open(TMP + "/deep.lua", "w") as f:
    f.write("jit.off()\nkeep = {}\nlocal function r(n) if n == 0 then\n"
            "  keep[#keep + 1] = {} return end r(n - 1) end\n"
            "for i = 1, 20 do r(60) end\n")
DEEP = TMP + "/deep.html"
ok(run(MP, "run", "--stacks", "64", "--html", DEEP, "deep.lua", cwd=TMP,
       env=ENV) is not None, "run --stacks 64 --html of a recursion 60 deep")
TH = TMP + "/tarantool.html"
ok(run(MP, "report", "--format", "html", "--accounting", "tarantool", "-o",
       TH, TMP + "/ex.ljm") is not None, "report --format html --accounting "
   "tarantool")
DH = TMP + "/diff.html"
ok(run(MP, "diff", "--format", "html", "-o", DH, TMP + "/base.ljm",
       TMP + "/new.ljm") is not None, "diff --format html")
DT = run(MP, "diff", TMP + "/base.ljm", TMP + "/new.ljm") or ""
DPH = TMP + "/diff-peak.html"  # One column more: the change at the peak.
ok(run(MP, "diff", "--peak", "--format", "html", "-o", DPH, TMP + "/base.ljm",
       TMP + "/new.ljm") is not None, "diff --peak --format html")

GEOM = ("(function () { function r(s) { var e = document.querySelector(s);"
        " if (!e) return null; var b = e.getBoundingClientRect();"
        " return [b.left, b.top, b.right, b.bottom]; }"
        " return { summary: r('#summary'), flame: r('#flame'),"
        " root: r('#flame g.f[data-i=\"0\"] rect'), sources: r('#sources'),"
        " scrollW: document.documentElement.scrollWidth,"
        " clientW: document.documentElement.clientWidth,"
        " innerH: window.innerHeight }; })()")


def png_size(data):
    """Width and height of a PNG from its IHDR chunk."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", data[16:24])


def layout(b, path, name):
    p = b.open("file://" + path, width=1280, height=800)
    ok(p.eval("document.body.getAttribute('data-ready')") == "1",
       name + ": its script ran to the end")
    g = p.eval(GEOM)
    ok(g["scrollW"] <= g["clientW"] <= 1280,
       name + ": no horizontal scrolling at 1280 px (content %s px wide, "
       "viewport %s)" % (g["scrollW"], g["clientW"]), g)
    return p, g


with Browser(timeout=60) as b:
    try:
        p, g = layout(b, EXH, "the example's report")
        ok(g["innerH"] == 800, "the viewport is 1280x800", g)
        s, f, root, t = g["summary"], g["flame"], g["root"], g["sources"]
        ok(s and f and root and s[3] <= f[1] and 0 <= f[1] < 800 and
           root[1] >= f[1] and root[3] <= 800 and root[2] - root[0] > 1000,
           "the summary, then the flame graph, its whole root frame within "
           "the first 800 px (summary ends at %s, flame graph %s..%s, root "
           "frame at %s..%s)" % (s and s[3], f and f[1], f and f[3],
                                 root and root[1], root and root[3]), g)
        ok(t and t[1] >= f[3], "the table of sources comes below the flame "
           "graph (at %s px)" % (t and t[1]), g)
        h = p.eval("Array.prototype.map.call(document.querySelectorAll("
                   "'#sources-head th'), function (t) { return t.textContent; })")
        ok("Live B at the end" in h and not [x for x in h if "Held" in x],
           "by default the table's heap summary is the live bytes, no "
           "Tarantool column", h)
        shot = p.b.call("Page.captureScreenshot", {"format": "png"},
                        session=p.session)
        data = base64.b64decode(shot["data"])
        with open(TMP + "/first-viewport.png", "wb") as out:
            out.write(data)
        ok(png_size(data) == (1280, 800), "a screenshot of the first "
           "viewport: 1280x800", png_size(data))
        # Its pixels under the root frame are the frame's colour, not the
        # page's white: the flame graph is drawn there.
        fill = p.eval("document.querySelector('#flame g.f[data-i=\"0\"] "
                      "rect').getAttribute('fill')")
        ok(fill and fill != "#fff" and fill != "white",
           "the root frame is filled (%s)" % fill)

        p, g = layout(b, DEEP, "the report of a deep recursion")
        f, root = g["flame"], g["root"]
        depth = p.eval("Math.max.apply(null, JSON.parse(document."
                       "getElementById('data').textContent).tree.nodes.map("
                       "function (n) { return n[0]; }))")
        ok(depth >= 60 and f and root and 0 <= root[1] and root[3] <= 800,
           "a flame graph %s frames deep: its root frame within the first "
           "800 px (at %s..%s), the graph scrolling in its box" %
           (depth, root and root[1], root and root[3]), g)

        heads = "Array.prototype.map.call(document.querySelectorAll(" \
                "'#sources-head th'), function (t) { return t.textContent; })"
        p, g = layout(b, TH, "the report with --accounting tarantool")
        h = p.eval(heads)
        tj = json.loads(run(MP, "report", "--format", "json", "--top", "0",
                            "--accounting", "tarantool", TMP + "/ex.ljm"))
        rows = p.eval("Array.prototype.map.call(document.querySelectorAll("
                      "'#sources-body tr'), function (tr) { return "
                      "[tr.children[0].textContent, tr.children[%d]."
                      "textContent]; })" % (h.index("Held B (Tarantool)")
                                            if "Held B (Tarantool)" in h else 0))
        held = {r["source"]["label"]: r["bytes"] for r in tj["heap_summary"]}
        got = {r[0]: int(r[1].replace(",", "")) for r in rows
               if r[1].replace(",", "") not in ("", "0")}
        ok("Held B (Tarantool)" in h and got == held, "--accounting tarantool: "
           "a Held B (Tarantool) column, as the JSON report's heap summary",
           (h, got, held))

        p, g = layout(b, MH, "a report of 120 sources with long labels")
        rows = p.eval("document.querySelectorAll('#sources-body tr').length")
        total = p.eval("JSON.parse(document.getElementById('data')"
                       ".textContent).sources.length")
        ok(rows == 50 and total > 120, "the table shows 50 of its %s "
           "sources at first" % total, rows)
        more = p.eval("(function () { var e = document.getElementById("
                      "'sources-more'); e.scrollIntoView({block: 'center'});"
                      " var r = e.getBoundingClientRect(); return [e.textContent,"
                      " r.left + r.width / 2, r.top + r.height / 2]; })()")
        ok(more[0] == "Show 50 more", "a button says what it shows", more)
        p.click(more[1], more[2])
        rows = p.eval("document.querySelectorAll('#sources-body tr').length")
        ok(rows == 100, "a click shows 50 more", rows)
        g = p.eval(GEOM)
        ok(g["scrollW"] <= g["clientW"], "still no horizontal scrolling", g)
        note = p.eval("document.getElementById('sources-note').textContent")
        is_(note, "The first 100 of %d sources." % total,
            "the note says how many are shown, of how many (once)")

        p, g = layout(b, DH, "the diff page")
        m = re.search(r"\n(\d+) sources? changed, (\d+) did not\n", DT)
        summ = p.eval("document.getElementById('summary').innerText")
        ok(m and ("Changed sources\t%s (%s unchanged)" % (m.group(1), m.group(2)))
           in summ, "the diff page says as many sources changed as the text "
           "diff (%s)" % (m and m.group(0).strip()), summ + "\n" + DT)
        nrow = p.eval("document.querySelectorAll('#sources-body tr').length")
        ok(m and nrow == int(m.group(1)), "and its table has one row per "
           "changed source (%s)" % nrow)
        p, g = layout(b, DPH, "the diff --peak page")
        h = p.eval("Array.prototype.map.call(document.querySelectorAll("
                   "'#sources-head th'), function (t) { return t.textContent; })")
        ok(h and h[-1] == "B at the peak, change", "with its column for the "
           "change at the peak", h)
    except Exception as e:  # A failure, not a crash of the test.
        ok(False, "no error in the test", repr(e))

shutil.rmtree(TMP, ignore_errors=True)
done()
