#!/usr/bin/env python3
# Every relative link of the README and of docs/ and bench/ pages names a
# file of the tree, and a #fragment one of the target page's headings (as
# GitHub makes anchors: lower case, punctuation dropped, spaces as '-'),
# so that moving a section (the README hands its details to docs/) cannot
# leave a link behind. Links inside code blocks are not links.
import glob
import os
import re

n_test = n_fail = 0


def anchors(path):
    out, fence = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            t = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", t).replace(" ", "-"))
    return out


pages = ["README.md"] + sorted(glob.glob("docs/*.md")) + sorted(glob.glob("bench/*.md"))
for page in pages:
    text = re.sub(r"```.*?```", "", open(page, encoding="utf-8").read(), flags=re.S)
    bad, count = [], 0
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        url = m.group(1)
        if re.match(r"[a-z]+:", url):
            continue
        count += 1
        path, _, frag = url.partition("#")
        target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(target):
            bad.append("%s: no such file" % url)
        elif frag and target.endswith(".md") and frag not in anchors(target):
            bad.append("%s: no such heading in %s" % (url, target))
    n_test += 1
    print("%s %d - %s: its %d relative links resolve" %
          ("not ok" if bad else "ok", n_test, page, count))
    for b in bad:
        print("# " + b)
    n_fail += bool(bad)
print("1..%d" % n_test)
raise SystemExit(1 if n_fail else 0)
