#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Opens a local HTML page in headless Chromium and says what it did, as JSON in OUT.json.

    page_check.py PAGE.html SCREENSHOT.png OUT.json [--eval JS]...

- "dom": the DOM once the page ran (chromium --dump-dom); "dom_nojs": with scripts disabled
  (Emulation.setScriptExecutionDisabled), what a reader without JavaScript gets;
- "console", "exceptions", "log": every console call, uncaught exception and browser log entry
  (a CSP violation, a blocked load) while the page loads, through the DevTools protocol over
  --remote-debugging-pipe (both tabs' events);
- "requests": every request the page made but the page itself (Network.requestWillBeSent),
  "resources": performance.getEntriesByType('resource'): both must be empty for a page that
  fetches nothing. The browser runs with a proxy and a host resolver that fail every request,
  so that a request is an error here rather than a fetch from the internet;
- "evals": each --eval expression's value (JSON-serialisable), evaluated in order after the load;
- the screenshot, taken by chromium --screenshot (viewport 1200 x 900).

Exits 0 when the browser ran, whatever it saw (the caller judges); 2 when it could not run.
"""
import json
import os
import select
import subprocess
import sys
import tempfile
import time

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Every request fails before it leaves: no resolver, a proxy on a port nothing listens on.
ISOLATE = ["--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
           "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run",
           "--disable-default-apps", "--disable-extensions"]
BASE = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]


def cli(args, profile, timeout):
    return subprocess.run([CHROMIUM] + BASE + ISOLATE + ["--user-data-dir=" + profile] + args,
                          capture_output=True, timeout=timeout, check=False)


class Pipe:
    """The DevTools protocol over --remote-debugging-pipe: fd 3 in, fd 4 out, NUL-framed."""

    def __init__(self, profile):
        self.to_r, self.to_w = os.pipe()
        self.from_r, self.from_w = os.pipe()

        def fds():
            # Out of the way first (either may be 3 or 4), then in place; subprocess closes
            # the descriptors not in pass_fds after this runs.
            r, w = os.dup(self.to_r), os.dup(self.from_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM] + BASE + ISOLATE + ["--user-data-dir=" + profile,
                                           "--remote-debugging-pipe", "--window-size=1200,900",
                                           "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=fds)
        os.close(self.to_r)
        os.close(self.from_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            r, _, _ = select.select([self.from_r], [], [], left)
            if r:
                chunk = os.read(self.from_r, 65536)
                if not chunk:
                    raise EOFError("chromium closed its pipe")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=20):
        want = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            m = self.read(deadline)
            if m.get("id") == want:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, timeout):
        deadline = time.monotonic() + timeout
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self.read(deadline)
            if m.get("method") == method:
                return m
            self.events.append(m)

    def drain(self, seconds):
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self.read(deadline))
        except TimeoutError:
            pass

    def close(self):
        try:
            self.send("Browser.close")
            self.proc.wait(timeout=10)
        except Exception:  # a browser that does not close is killed, by its own pid
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_w)
        os.close(self.from_r)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    page, shot = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    evals = []
    args = sys.argv[4:]
    while args:
        if args[0] != "--eval" or len(args) < 2:
            sys.exit("unexpected argument %r" % args[0])
        evals.append(args[1])
        args = args[2:]
    url = "file://" + page
    out = {}
    with tempfile.TemporaryDirectory(prefix="rover-chromium-") as profile:
        try:
            r = cli(["--dump-dom", url], profile, 30)
            out["dom"] = r.stdout.decode("utf-8", "replace")
            r = cli(["--window-size=1200,900", "--screenshot=" + shot, url], profile, 30)
            out["screenshot_rc"] = r.returncode
        except (OSError, subprocess.TimeoutExpired) as e:
            print("chromium: %s" % e, file=sys.stderr)
            sys.exit(2)
        b = Pipe(profile)
        try:
            target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            s = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Runtime", "Log", "Network", "Page"):
                b.call(domain + ".enable", session=s)
            b.call("Page.navigate", {"url": url}, session=s)
            b.wait_event("Page.loadEventFired", 20)
            b.drain(0.5)
            for e in evals:
                r = b.call("Runtime.evaluate", {"expression": e, "returnByValue": True,
                                                "awaitPromise": True}, session=s)
                if "exceptionDetails" in r:
                    out.setdefault("evals", []).append({"error": r["exceptionDetails"].get("text")})
                else:
                    out.setdefault("evals", []).append(r["result"].get("value"))
            res = b.call("Runtime.evaluate", {
                "expression": "JSON.stringify(performance.getEntriesByType('resource')"
                              ".map(function (e) { return e.name; }))",
                "returnByValue": True}, session=s)
            out["resources"] = json.loads(res["result"]["value"])
            b.drain(0.3)
            # The page again in a tab whose scripts are off: its DOM through DevTools, since
            # --dump-dom itself needs scripts.
            target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            s2 = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            b.call("Page.enable", session=s2)
            b.call("Emulation.setScriptExecutionDisabled", {"value": True}, session=s2)
            b.call("Page.navigate", {"url": url}, session=s2)
            b.wait_event("Page.loadEventFired", 20)
            root = b.call("DOM.getDocument", {"depth": 0}, session=s2)["root"]["nodeId"]
            out["dom_nojs"] = b.call("DOM.getOuterHTML", {"nodeId": root}, session=s2)["outerHTML"]
            b.drain(0.3)
        except (TimeoutError, EOFError, RuntimeError, KeyError) as e:
            print("chromium over DevTools: %s" % e, file=sys.stderr)
            b.close()
            sys.exit(2)
        b.close()
    ev = b.events
    out["console"] = [{"type": m["params"]["type"],
                       "text": " ".join(str(a.get("value", a.get("description", "")))
                                        for a in m["params"].get("args", []))}
                      for m in ev if m.get("method") == "Runtime.consoleAPICalled"]
    out["exceptions"] = [m["params"]["exceptionDetails"].get("text")
                         for m in ev if m.get("method") == "Runtime.exceptionThrown"]
    out["log"] = [{"level": m["params"]["entry"]["level"], "text": m["params"]["entry"]["text"]}
                  for m in ev if m.get("method") == "Log.entryAdded"]
    out["requests"] = [m["params"]["request"]["url"]
                       for m in ev if m.get("method") == "Network.requestWillBeSent"
                       and m["params"]["request"]["url"] != url]
    out["page_loaded"] = any(m.get("method") == "Network.requestWillBeSent"
                             and m["params"]["request"]["url"] == url for m in ev)
    with open(sys.argv[3], "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
