#!/usr/bin/env python3
# ljmemprof snapshot --format html (issue 20): the page of a heap snapshot
# holds the JSON report's numbers exactly (its data is that report, and the
# top of the dominator tree), and in a real browser (headless Chromium,
# tests/lib/cdp.py) it loads with no console error or exception and shows
# them: the totals, the types, the retainers with their paths and, with
# --profile, the lines that made what they hold; a click opens a node of
# the dominator tree. The text report agrees too. The program lives under
# a long directory, so that its lines are long: at 1280x800 the page does
# not scroll sideways, the long cells cut with their full text in a title.
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, "tests/lib")
from cdp import Browser  # noqa: E402
from tap import ok, is_, run, count, done  # noqa: E402

BUILD = os.path.abspath(os.environ.get("BUILD", "build"))
MP = BUILD + "/ljmemprof"
LUAJIT = os.environ.get("LUAJIT", "luajit")
TMP = tempfile.mkdtemp(prefix="ljmp-snaphtml-")
ENV = dict(os.environ, LUA_CPATH=BUILD + "/?.so;;")

LEAK = """local mp = require("ljmemprof")
local sessions = {}
local function handler(i) sessions[#sessions + 1] = { id = i, data = ("x"):rep(100) .. i } end
local history = {}
local function remember(i) history[#history % 50 + 1] = { i } end
assert(mp.start{ path = "leak.ljm", stacks = 8 })
for i = 1, 2000 do handler(i); remember(i) end
_G.keep = handler
assert(mp.stop{ collect = true, snapshot = "leak.ljh" })
"""
LONG = TMP + "/" + "/".join(["a-rather-long-directory-name-%d" % i
                             for i in range(6)])
os.makedirs(LONG)
with open(LONG + "/leak.lua", "w") as f:
    f.write(LEAK)
ok(run(LUAJIT, "-joff", LONG + "/leak.lua", cwd=LONG, env=ENV) is not None,
   "the leaking program runs, recorded and snapshotted")
SNAP, PROF = LONG + "/leak.ljh", LONG + "/leak.ljm"


def data_of(path):
    """The page's data: its <script type="application/json"> element."""
    with open(path) as f:
        page = f.read()
    m = re.search(r'<script id="data" type="application/json">(.*?)</script>',
                  page, re.S)
    return json.loads(m.group(1)) if m else None


def page(*opts):
    out = TMP + "/p%d.html" % count()
    r = run(MP, "snapshot", "--format", "html", "-o", out, *opts, SNAP)
    return out if r is not None else None


# -- The data: the JSON report's, exactly -----------------------------------

J = json.loads(run(MP, "snapshot", "--format", "json", "--profile", PROF,
                   SNAP))
JP = json.loads(run(MP, "snapshot", "--format", "json", SNAP))
HP = page("--profile", PROF)
ok(HP is not None, "snapshot --format html --profile PROF: status 0")
D = data_of(HP)
is_(D["report"], J, "the page's report is the JSON report with --profile, "
    "exactly")
is_(D["kind"] + ":" + D["file"], "snapshot:" + SNAP, "its kind and its file")
H0 = page()
is_(data_of(H0)["report"], JP, "without --profile: the JSON report without "
    "its recording")
T = D["tree"]
is_(T[0][:2] + T[0][4:5], [-1, 0, J["bytes"]],
    "the tree's root retains every live byte (%d)" % J["bytes"])
ids = {n[1]: n for n in T}
top = J["retainers"][0]
ok(top["id"] in ids and ids[top["id"]][4] == top["retained"] and
   ids[top["id"]][7] == top["path"],
   "the first retainer is in the tree with its retained size and its path")
bad = [n for n in T if n[0] >= 0 and T[n[0]][4] < n[4]]
sums = {}
for n in T:
    if n[0] >= 0:
        sums[n[0]] = sums.get(n[0], 0) + n[4]
bad += [n for i, n in enumerate(T)
        if sums.get(i, 0) + n[6] + n[3] != n[4]]
is_(bad, [], "each node of the %d retains what its children shown, those "
    "left out and itself do" % len(T))

# The text report's retainers and lines are the JSON's.
text = run(MP, "snapshot", "--profile", PROF, SNAP)
tr = re.findall(r"^ +(\d+)B +(\d+)B  (\S+(?: \S+)?) +(.*)$",
                text.split("TOP RETAINERS (")[1].split("\nPATH CLASSES")[0],
                re.M)
is_([(int(a), int(b), c.strip(), d) for a, b, c, d in tr],
    [(r["retained"], r["self"], r["type"], r["path"])
     for r in J["retainers"]], "the text's top retainers are the JSON's")
made = re.findall(r"^ +(\d+)B +(\d+)  (.*?): (\d+)% held by (.*)$",
                  text.split("MADE WITHIN THE RECORDING")[1], re.M)
is_([(int(a), int(b), c, d) for a, b, c, d, e in made],
    [(l["bytes"], l["objects"], l["line"],
      "%.0f" % (100.0 * l["held_bytes"] / l["bytes"]))
     for l in J["recording"]["lines"]],
    "the text's lines that made what is live are the JSON's")

# -- In a browser --------------------------------------------------------------

if not shutil.which("chromium"):
    ok(False, "chromium is installed (Debian chromium; make deps)")
    done()

ROWS = ("Array.prototype.map.call(document.querySelectorAll('#%s tr'),"
        "function (tr) { return Array.prototype.map.call(tr.children,"
        "function (td) { return td.textContent; }); })")


def b(n):
    return format(n, ",") + " B"


with Browser(timeout=60) as br:
    p = br.open("file://" + HP)
    is_(p.problems(), [], "the page loads with no console error or exception")
    is_(p.eval("document.body.getAttribute('data-ready')"), "1",
        "its script ran to the end")
    summ = p.eval("document.getElementById('summary').innerText")
    ok("Objects\t" + format(J["objects"], ",") in summ and
       "Live\t" + b(J["bytes"]) in summ and
       ("The VM counts\t" + b(J["gc_total"]) + ": objects " + b(J["bytes"]))
       in summ and
       ("Made within the recording\t" + format(J["recording"]["made_objects"],
        ",") + " of " + format(J["objects"], ",") + " objects, " +
        b(J["recording"]["made_bytes"])) in summ,
       "the summary shows the objects, the live bytes, the VM's count and "
       "what the recording made", summ)
    is_(p.eval(ROWS % "types-body"),
        [[t["type"], format(t["count"], ","), b(t["bytes"]),
          "%.0f%%" % (100.0 * t["bytes"] / J["bytes"])] for t in J["types"]],
        "the types table is the JSON report's")
    made = {r["retainer"]: r for r in J["recording"]["retainers"]}
    want = []
    for i, r in enumerate(J["retainers"]):
        m = made.get(i)
        want.append([b(r["retained"]), b(r["self"]), r["type"], r["path"],
                     b(m["made_bytes"]) if m else "0 B",
                     "; ".join(l["line"] + ": " + b(l["bytes"])
                               for l in m["lines"]) if m else ""])
    is_(p.eval(ROWS % "retainers-body"), want,
        "the retainers: retained, self, type, path, and the lines that made "
        "what each holds")
    is_(p.eval(ROWS % "made-body"),
        [[b(l["bytes"]), format(l["objects"], ","), l["line"],
          "%.0f%%" % (100.0 * l["held_bytes"] / l["bytes"]),
          J["retainers"][l["held_by"]]["path"]]
         for l in J["recording"]["lines"]],
        "the lines that made what is live, each with its retainer")
    is_(p.eval(ROWS % "classes-body"),
        [[c["path"], format(c["count"], ","), c["type"], b(c["retained"])]
         for c in J["classes"]], "the path classes")
    # The tree: the root open, its children shown; a click opens one.
    shown = p.eval("document.querySelectorAll('#tree .dline').length")
    kids = [i for i, n in enumerate(T) if n[0] == 0]
    is_(shown, 1 + len(kids), "the tree shows the root and its %d children"
        % len(kids))
    k = [i for i in kids if any(n[0] == i for n in T)][0]
    r = p.eval("(function () { var e = document.querySelector("
               "\"#tree .dline[data-i='%d']\"); e.scrollIntoView({block: "
               "'center'}); var r = e.getBoundingClientRect(); return [r.left "
               "+ 5, r.top + r.height / 2]; })()" % k)
    p.click(r[0], r[1])
    is_(p.eval("document.querySelectorAll('#tree .dline').length"),
        1 + len(kids) + len([n for n in T if n[0] == k]),
        "a click on a node opens it: its children are shown")
    ok(p.eval("document.getElementById('tree-info').textContent")
       .startswith(T[k][7] + ": "), "and its path is shown")
    # At 1280x800: no horizontal scrolling; a cut cell has its full text
    # in its title.
    pw = br.open("file://" + HP, width=1280, height=800)
    w = pw.eval("[document.documentElement.scrollWidth, "
                "document.documentElement.clientWidth]")
    ok(w[0] <= w[1] <= 1280, "at 1280 px no horizontal scrolling (content "
       "%s px wide, viewport %s)" % (w[0], w[1]), w)
    cut = pw.eval("Array.prototype.filter.call(document.querySelectorAll("
                  "'td.label div, #tree .dpath'), function (d) { return "
                  "d.scrollWidth > d.clientWidth && (d.title || "
                  "d.parentNode.title) != d.textContent; })"
                  ".length")
    longest = max(len(l["line"]) for l in J["recording"]["lines"])
    ok(cut == 0 and longest > 200, "every cut cell has its full text in its "
       "title (the longest line is %d characters)" % longest, cut)
    p0 = br.open("file://" + H0)
    is_(p0.problems(), [], "without --profile: no error either")
    is_(p0.eval("getComputedStyle(document.getElementById('made-section'))"
                ".display"), "none", "and no section of the recording")

# -- Errors ----------------------------------------------------------------------

shutil.copyfile(SNAP, TMP + "/copy.ljh")
pr = subprocess.run([MP, "diff", "--format", "html", SNAP, TMP + "/copy.ljh"],
                    capture_output=True, text=True, timeout=60)
is_((pr.returncode, pr.stderr), (2, "ljmemprof diff: the diff of two snapshots "
    "is text or json; the html format is of one snapshot\n"),
    "diff --format html of two snapshots: refused")
shutil.rmtree(TMP)
done()
