"""cdp.py: drive headless Chromium through its DevTools protocol, for the
tests of the HTML report.

    with Browser(timeout=60) as b:
        page = b.open("file:///tmp/report.html")   # waits for the load event
        page.eval("document.title")                 # a value, by JSON
        page.click(x, y)                            # a real mouse click
        page.type("text")                           # into the focused field
        page.problems()                             # console errors, exceptions

Chromium is started with --remote-debugging-pipe: the protocol runs over
two pipes (its file descriptors 3 and 4), one JSON message per NUL byte, so
there is no port to find and nothing else to install (no chromedriver, no
websocket library). Every wait is bounded: a reply or an event that does
not come within the timeout raises TimeoutError, and the browser is killed
when the block ends.
"""

import json
import os
import select
import shutil
import subprocess
import tempfile
import time


class Browser:
    def __init__(self, timeout=60, binary="chromium"):
        self.timeout = timeout
        self.binary = shutil.which(binary) or binary
        self.proc = None
        self.buf = b""
        self.next_id = 0
        self.events = []

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="ljmp-chromium-")
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def child_fds():
            # Chromium reads commands on fd 3 and writes on fd 4. dup2 of a
            # descriptor onto itself would keep its close-on-exec flag, so
            # go through fresh copies.
            a, b = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [self.binary, "--headless", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--remote-debugging-pipe",
             "--user-data-dir=" + self.profile, "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, preexec_fn=child_fds,
            close_fds=False, start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        return self

    def __exit__(self, *exc):
        try:
            if self.proc.poll() is None:
                try:
                    self.call("Browser.close", timeout=5)
                except Exception:
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, 9)
                    self.proc.wait(timeout=5)
        finally:
            os.close(self.to_chrome)
            os.close(self.from_chrome)
            shutil.rmtree(self.profile, ignore_errors=True)
        return False

    # -- The protocol -------------------------------------------------------

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def recv(self, timeout):
        end = time.monotonic() + timeout
        while b"\0" not in self.buf:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from chromium in %g s" % timeout)
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if ready:
                data = os.read(self.from_chrome, 1 << 16)
                if not data:
                    raise EOFError("chromium closed its pipe")
                self.buf += data
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=None):
        """Send a command and return its result; events that arrive
        meanwhile are kept in self.events."""
        i = self.send(method, params, session)
        end = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self.recv(max(end - time.monotonic(), 0.001))
            if msg.get("id") == i:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method, session, timeout=None):
        """Wait for an event (or take it from those already seen)."""
        end = time.monotonic() + (timeout or self.timeout)
        while True:
            for k, e in enumerate(self.events):
                if e.get("method") == method and e.get("sessionId") == session:
                    del self.events[k]
                    return e
            self.events.append(self.recv(max(end - time.monotonic(), 0.001)))

    def open(self, url, width=1400, height=1000):
        """A new page that has loaded url (its load event fired)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})
        session = self.call("Target.attachToTarget",
                            {"targetId": target["targetId"],
                             "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Runtime", "Log", "Page"):
            self.call(domain + ".enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1,
                   "mobile": False}, session=session)
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session)
        return page


class Page:
    def __init__(self, browser, session):
        self.b = browser
        self.session = session

    def eval(self, expr):
        """The value of a JavaScript expression (by JSON); an exception in
        it raises RuntimeError."""
        r = self.b.call("Runtime.evaluate",
                        {"expression": expr, "returnByValue": True,
                         "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def click(self, x, y):
        """A left click at page coordinates (x, y), as a mouse makes it."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.b.call("Input.dispatchMouseEvent",
                        {"type": kind, "x": x, "y": y, "button": "left",
                         "clickCount": 1}, session=self.session)

    def type(self, text):
        """Type text into the element that has the focus."""
        self.b.call("Input.insertText", {"text": text}, session=self.session)

    def problems(self):
        """Console errors and warnings, uncaught exceptions and failed loads
        seen so far on this page, as strings."""
        end = time.monotonic() + 2
        try:  # Drain what has arrived (for 2 s at most).
            while time.monotonic() < end:
                self.b.events.append(self.b.recv(0.2))
        except TimeoutError:
            pass
        out = []
        for e in self.b.events:
            if e.get("sessionId") != self.session:
                continue
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: %s %s" % (
                    d.get("text"), d.get("exception", {}).get("description")))
            elif m == "Runtime.consoleAPICalled" and \
                    p.get("type") in ("error", "warning", "assert"):
                out.append("console.%s: %s" % (p["type"], " ".join(
                    str(a.get("value", a.get("description")))
                    for a in p.get("args", []))))
            elif m == "Log.entryAdded" and \
                    p.get("entry", {}).get("level") in ("error", "warning"):
                out.append("log: %s" % p["entry"].get("text"))
        return out
