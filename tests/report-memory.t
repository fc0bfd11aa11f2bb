#!/usr/bin/env python3
# Where the memory is (issue 21): a profile recorded with native = true
# carries the process's RSS at its time marks, and the text report's
# MEMORY line, the JSON report's memory, the HTML page's Memory row and
# its timeline's RSS line say what `info` says of it, to the byte: RSS at
# the end and at most, the VM heap and the native memory live, the rest. A profile without RSS
# records, a merge and a pass of one heap (--heap vm) show none of it.
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, "tests/lib")
from cdp import Browser  # noqa: E402
from tap import ok, is_, run, count, done  # noqa: E402


BUILD = os.path.abspath(os.environ.get("BUILD", "build"))
MP = BUILD + "/ljmemprof"
TMP = tempfile.mkdtemp(prefix="ljmp-memory-")
ENV = dict(os.environ, LUA_CPATH=BUILD + "/?.so;;")
NAT = TMP + "/native.ljm"
VM = TMP + "/vm.ljm"
run(MP, "run", "--native", "-o", NAT, "--", "luajit", "-joff",
    "examples/example.lua", env=ENV)
run(MP, "run", "-o", VM, "--", "luajit", "-joff", "examples/example.lua",
    env=ENV)
ok(os.path.exists(NAT) and os.path.exists(VM),
   "run --native and run: two profiles of the example")

info = json.loads(run(MP, "info", "--format", "json", NAT) or "{}")
mem = info.get("memory", {})
ok(mem and mem["rss_bytes"] > 0 and mem["native_live_bytes"] > 0 and
   mem["vm_live_bytes"] + mem["native_live_bytes"] == info["live_bytes"] and
   mem["jit_mcode_bytes"] == 0 and
   mem["rest_bytes"] == mem["rss_bytes"] - info["live_bytes"] and
   mem["rss_max_bytes"] >= mem["rss_bytes"],
   "info: RSS, the VM heap and native memory live (their sum: live), no "
   "machine code (-joff), the rest", mem)
itext = [x[len("memory:     "):] for x in
         (run(MP, "info", NAT) or "").splitlines() if x.startswith("memory:")]
is_(itext, ["RSS %dB at the end (at most %dB at a time mark): VM heap %dB and "
            "native %dB live (allocated within the profile), JIT machine "
            "code %dB mapped, the rest %dB (allocator caches and "
            "fragmentation, stacks, mapped files, and what was allocated "
            "before the start)" %
            (mem.get("rss_bytes"), mem.get("rss_max_bytes"),
             mem.get("vm_live_bytes"), mem.get("native_live_bytes"),
             mem.get("jit_mcode_bytes"), mem.get("rest_bytes"))],
    "info's text says the same figures as its JSON")


def memory_lines(*args):
    return [x for x in (run(MP, "report", *args) or "").splitlines()
            if x.startswith("MEMORY")]


is_(memory_lines(NAT), ["MEMORY: " + t for t in itext],
    "the text report's MEMORY line is info's, byte for byte")
rep = run(MP, "report", NAT) or ""
ok(re.search(r"\n\nHEAP SUMMARY: .*\n(.*\n)*?\nMEMORY: RSS .*\n\n", rep),
   "MEMORY follows the heap summary, a blank line before and after")
is_(memory_lines("--leak-only", NAT), ["MEMORY: " + t for t in itext],
    "--leak-only keeps it (it sums up what is held)")
human = memory_lines("-H", NAT)
ok(len(human) == 1 and re.match(r"MEMORY: RSS [0-9.]+[KMG]iB at the end \(at most [0-9.]+[KMG]iB", human[0]),
   "-H: in human units", human)
is_(memory_lines("--heap", "vm", NAT), [],
    "--heap vm: no MEMORY line (the native memory was not counted)")
is_(memory_lines(VM), [], "a profile without RSS records: no MEMORY line")
VM2 = TMP + "/vm2.ljm"
shutil.copyfile(NAT, VM2)
is_(memory_lines(NAT, VM2), [], "a merge of two profiles: no MEMORY line")
jrep = json.loads(run(MP, "report", "--format", "json", NAT) or "{}")
is_(jrep.get("memory"), mem, "the JSON report's memory is info's")
jvm = json.loads(run(MP, "report", "--format", "json", "--heap", "vm", NAT) or "{}")
ok("memory" not in jvm and "heap_summary" in jvm,
   "the JSON report under --heap vm has none")


def page_data(path):
    """The JSON data of a page."""
    with open(path) as f:
        html = f.read()
    m = re.search(r'<script id="data" type="application/json">(.*?)</script>',
                  html, re.S)
    return json.loads(m.group(1)) if m else {}


NH, VH = TMP + "/native.html", TMP + "/vm.html"
run(MP, "report", "--format", "html", "-o", NH, NAT)
run(MP, "report", "--format", "html", "-o", VH, VM)
nd, vd = page_data(NH), page_data(VH)
is_(nd.get("summary", {}).get("memory"), mem,
    "the page's data: the summary's memory is info's")
rss = nd.get("timeline", {}).get("rss", [])
ok(len(rss) >= 2 and rss[-1][1] == mem["rss_bytes"] and
   max(r[1] for r in rss) == mem["rss_max_bytes"] and
   all(a[0] <= b[0] for a, b in zip(rss, rss[1:])) and
   rss[-1][0] <= info["events"]["alloc"] + info["events"]["realloc"] +
   info["events"]["free"],
   "the timeline's RSS series: in event order, its last value info's RSS at "
   "the end, its largest info's most", rss[:3] + rss[-3:])
ok("memory" not in vd.get("summary", {"memory": 1}) and
   "rss" not in vd.get("timeline", {"rss": 1}),
   "a profile without RSS records: neither in the page's data")

if not shutil.which("chromium"):
    ok(False, "chromium is installed (Debian chromium; make deps)")
else:
    with Browser(timeout=60) as b:
        try:
            p = b.open("file://" + NH)
            is_(p.problems(), [], "the native page loads with no console error")
            summ = p.eval("document.getElementById('summary').innerText")
            row = [x for x in summ.splitlines() if x.startswith("Memory\t")]
            fmt = lambda n: format(n, ",")  # noqa: E731
            is_(row, ["Memory\tRSS %s B (%s) at the end, at most %s B at a "
                      "time mark: VM heap %s B and native %s B live (allocated "
                      "within the profile), JIT machine code %s B mapped, "
                      "the rest %s B (allocator caches and fragmentation, "
                      "stacks, mapped files, and what was allocated before "
                      "the start)" %
                      (fmt(mem["rss_bytes"]),
                       p.eval("human(%d)" % mem["rss_bytes"]),
                       fmt(mem["rss_max_bytes"]), fmt(mem["vm_live_bytes"]),
                       fmt(mem["native_live_bytes"]),
                       fmt(mem["jit_mcode_bytes"]), fmt(mem["rest_bytes"]))],
                "the Memory row says info's figures")
            pts = p.eval("document.getElementById('rss-line')"
                         ".getAttribute('points').split(' ').length")
            is_(pts, len(rss), "the timeline draws the RSS line through each "
                "of its %d values" % len(rss))
            ys = p.eval("document.getElementById('rss-line').getAttribute("
                        "'points').split(' ').map(function (q) { return "
                        "+q.split(',')[1]; })")
            top = min(range(len(ys)), key=lambda i: ys[i])
            is_(rss[top][1], mem["rss_max_bytes"],
                "the line's highest point is the RSS at its most (the top of "
                "the axis)")
            is_(p.eval("document.getElementById('rss-label').textContent"),
                "RSS " + p.eval("human(%d)" % mem["rss_bytes"]),
                "the line is labelled with the RSS at the end")
            note = p.eval("document.getElementById('timeline-note').textContent")
            ok(("The green line is the process's RSS at %d time marks" %
                len(rss)) in note, "the note says what the line is", note)
            p = b.open("file://" + VH)
            is_(p.problems(), [], "the page without RSS loads with no console "
                "error")
            is_(p.eval("[!!document.getElementById('rss-line'), "
                       "document.getElementById('summary').innerText"
                       ".indexOf('Memory'), document.getElementById("
                       "'timeline-note').textContent.indexOf('RSS')]"),
                [False, -1, -1],
                "without RSS records: no line, no Memory row, no word of RSS")
        except Exception as e:  # A failure, not a crash of the test.
            ok(False, "no error in the browser's checks", repr(e))

shutil.rmtree(TMP, ignore_errors=True)
done()
