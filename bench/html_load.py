#!/usr/bin/env python3
"""html_load.py FILE [RUNS]: how long an HTML report takes to open in
headless Chromium (bench/run calls it; not a test).

Each run opens the page in a fresh tab and reads, on the page's own clock
(from the start of the navigation), when its load event ended: the script
is inline at the end of the body, so by then it has parsed the data and
built the table, the flame graph and the timeline (the body's data-ready
attribute says it finished). Prints one line: the file's size, the median
load time and the median time to open a tab with it (as seen from here),
in ms, and the number of sources and flame graph frames drawn.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
from cdp import Browser  # noqa: E402


def main():
    path = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    loaded, wall = [], []
    info = None
    with Browser(timeout=120) as b:
        for _ in range(runs):
            t0 = time.monotonic()
            p = b.open("file://" + path)
            wall.append((time.monotonic() - t0) * 1000)
            r = p.eval("[document.body.getAttribute('data-ready'),"
                       "performance.getEntriesByType('navigation')[0]"
                       ".loadEventEnd, D.sources.length,"
                       "document.querySelectorAll('#flame g.f').length]")
            if r[0] != "1":
                sys.exit("html_load: the page's script did not finish")
            loaded.append(r[1])
            info = r
            problems = p.problems()
            if problems:
                sys.exit("html_load: %s" % problems[0])
    med = lambda v: sorted(v)[len(v) // 2]
    print("html %.0f KB: load event %.0f ms, open in a tab %.0f ms (median of "
          "%d); %d sources, %d frames drawn" % (
              os.path.getsize(path) / 1024.0, med(loaded), med(wall), runs,
              info[2], info[3]))


if __name__ == "__main__":
    main()
