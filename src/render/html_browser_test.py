#!/usr/bin/env python3
"""The HTML pages of `gpuscope analyze/diff --html` in a real headless Chromium.

For each page: it loads with nothing in the console (no script error, no resource refused by
the page's Content-Security-Policy, no failed load: a page that tried the network, or text
from a trace that escaped into markup as <script>, would log one), it shows its sections, and a
1280x800 screenshot is kept under OUTDIR (a test artefact) and checked to be non-blank by
decoding the PNG here (zlib) and counting its distinct colours.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: file
descriptors 3 and 4, NUL-terminated JSON messages), so no port is opened and no output text is
parsed. Exit 77 (skipped) only when no chromium is installed.

usage: html_browser_test.py GPUSCOPE TESTDATA OUTDIR
"""
import base64
import fcntl
import glob
import gzip
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

TIMEOUT_S = 30  # Per page, load and screenshot.


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, exe, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # The child's fds 3 and 4 are the pipe ends: moved above 9 first so the dup2s cannot
        # clobber one another, then kept by pass_fds while close_fds closes everything else.
        def fds():
            r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)
        args = [exe, "--headless", "--remote-debugging-pipe", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--mute-audio",
                "--user-data-dir=" + profile, "--no-sandbox", "about:blank"]
        # --no-sandbox: Chromium refuses to run as root with its sandbox, and CI containers
        # often lack the user namespaces it needs otherwise. The pages are our own output,
        # rendered offline (their CSP forbids every load).
        self.proc = subprocess.Popen(args, preexec_fn=fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     close_fds=True, pass_fds=(3, 4))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read_message(self, deadline):
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            ready, _, _ = select.select([self.from_chrome], [], [], 0.5)
            if ready:
                chunk = os.read(self.from_chrome, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe (exit code %s)" % self.proc.poll())
                self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=None):
        want = self.send(method, params, session)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            msg = self.read_message(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method, session, deadline):
        for i, e in enumerate(self.events):
            if e.get("method") == method and e.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            msg = self.read_message(deadline)
            if msg.get("method") == method and msg.get("sessionId") == session:
                return msg
            self.events.append(msg)

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)


def console_problems(events, session):
    """The messages a page logged that a clean page does not: script errors, console errors and
    warnings, and the browser's own errors (CSP violations, failed loads)."""
    out = []
    for e in events:
        if e.get("sessionId") != session:
            continue
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            out.append("exception: " + json.dumps(p.get("exceptionDetails", {}))[:300])
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert", "warning"):
            out.append("console.%s: %s" % (p.get("type"), json.dumps(p.get("args", []))[:300]))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            entry = p["entry"]
            out.append("log %s: %s (%s)" % (entry.get("level"), entry.get("text", "")[:300], entry.get("url", "")))
        elif m == "Network.loadingFailed":
            out.append("load failed: " + json.dumps(p)[:300])
    return out


def render(browser, page, png_path):
    target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        browser.call(domain + ".enable", session=session)
    browser.call("Emulation.setDeviceMetricsOverride",
                 {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}, session)
    browser.call("Page.navigate", {"url": "file://" + os.path.abspath(page)}, session)
    browser.wait_event("Page.loadEventFired", session, time.monotonic() + TIMEOUT_S)
    facts = browser.call("Runtime.evaluate", {"returnByValue": True, "expression": """JSON.stringify({
        title: document.title,
        sections: document.querySelectorAll('section').length,
        svgs: document.querySelectorAll('svg').length,
        scripts: document.querySelectorAll('script').length,
        h3: Array.from(document.querySelectorAll('h3')).map(e => e.textContent),
        width: document.documentElement.scrollWidth})"""}, session)
    facts = json.loads(facts["result"]["value"])
    shot = browser.call("Page.captureScreenshot", {"format": "png"}, session)
    with open(png_path, "wb") as f:
        f.write(base64.b64decode(shot["data"]))
    browser.call("Target.closeTarget", {"targetId": target})
    problems = console_problems(browser.events, session)
    browser.events = [e for e in browser.events if e.get("sessionId") != session]
    return facts, problems


def png_colours(path, limit=64):
    """(width, height, number of distinct pixel values, up to `limit`) of an 8-bit RGB/RGBA PNG,
    decoded here: chunks, zlib, and the five PNG row filters."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, [], 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG format"
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(height):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        if len(colours) < limit and y % 4 == 0:
            for x in range(0, stride, bpp * 3):
                colours.add(bytes(line[x:x + bpp]))
        prev = line
    return width, height, len(colours)


def hostile_trace(path):
    """A small PyTorch trace whose kernel name holds markup and an ampersand (invalid UTF-8 in a
    PyTorch trace makes the event invalid JSON, skipped by the reader; its replacement in names
    from captures is html_report_test's)."""
    name = "void evil<script>document.title='x'</script>&amp;<img src=http://example.com/x.png>\u00e9_kernel"
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % i, "pid": 1, "tid": 1,
               "ts": 1000 + i * 100, "dur": 100} for i in range(4)]
    for i in range(4):
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 1010 + i * 100, "dur": 60,
                       "args": {"device": 0, "stream": 7, "grid": [132, 1, 1], "block": [128, 1, 1]}})
    doc = {"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}], "traceEvents": events}
    text = json.dumps(doc, ensure_ascii=False).encode("utf-8")
    with open(path, "wb") as f:
        f.write(text)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    gpuscope, testdata, outdir = sys.argv[1:]
    chromium = find_chromium()
    if not chromium:
        print("SKIPPED: no chromium on PATH (Debian package `chromium`, in scripts/debian-packages); "
              "the HTML pages were not rendered")
        sys.exit(77)
    os.makedirs(outdir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="gpuscope-html-test-")
    started = time.monotonic()
    try:
        pages = {}  # name -> (path, expected headings)
        report_sections = ["Timeline of the window", "Idle causes by step", "Top kernels", "Findings"]

        def make(name, args, expect):
            page = os.path.join(outdir, name + ".html")
            r = subprocess.run([gpuscope] + args + ["--html", page], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, timeout=60)
            if r.returncode != 0:
                raise AssertionError("%s: gpuscope %s exited %d: %s" % (name, " ".join(args), r.returncode, r.stderr))
            pages[name] = (page, expect)

        for trace in sorted(glob.glob(os.path.join(testdata, "pytorch", "*.json.gz"))):
            make(os.path.basename(trace).split(".")[0], ["analyze", trace], report_sections)
        make("capture_dataloader", ["analyze", os.path.join(testdata, "pyzoo", "dataloader.gpuscope")],
             report_sections + ["Device samples over time"])
        make("diff_fp32_bf16", ["diff", os.path.join(testdata, "pytorch", "fp32_sync.json.gz"),
                                os.path.join(testdata, "pytorch", "bf16_sync.json.gz")],
             ["The change that made the difference", "Headline numbers", "Findings"])
        hostile = os.path.join(work, "hostile.json")
        hostile_trace(hostile)
        make("hostile_names", ["analyze", hostile], report_sections)

        failures = []
        browser = Browser(chromium, os.path.join(work, "profile"))
        try:
            for name, (page, expect) in sorted(pages.items()):
                size = os.path.getsize(page)
                png = os.path.join(outdir, name + ".png")
                facts, problems = render(browser, page, png)
                width, height, colours = png_colours(png)
                missing = [h for h in expect if h not in " | ".join(facts["h3"])]
                print("%-22s %7d bytes  %d sections  %d svg  screenshot %dx%d, %d+ colours  %s" %
                      (name, size, facts["sections"], facts["svgs"], width, height, colours,
                       "console clean" if not problems else "%d console messages" % len(problems)))
                if size >= 1 << 20:
                    failures.append("%s: %d bytes, not under 1 MB" % (name, size))
                if problems:
                    failures.append("%s: console: %s" % (name, "; ".join(problems)))
                if facts["scripts"] != 0 or facts["title"].startswith("x"):
                    failures.append("%s: trace text became markup (scripts %d, title %r)" %
                                    (name, facts["scripts"], facts["title"]))
                if facts["sections"] < 1 or missing:
                    failures.append("%s: sections %d, missing headings %s" % (name, facts["sections"], missing))
                if (width, height) != (1280, 800):
                    failures.append("%s: screenshot %dx%d, not 1280x800" % (name, width, height))
                if colours < 8:
                    failures.append("%s: screenshot looks blank (%d distinct colours)" % (name, colours))
                if facts["width"] > 1280:
                    failures.append("%s: page is %d px wide, wider than the 1280 px window" % (name, facts["width"]))
        finally:
            browser.close()
        print("%d pages in %.1f s; screenshots in %s" % (len(pages), time.monotonic() - started, outdir))
        if failures:
            print("FAILED:\n  " + "\n  ".join(failures))
            sys.exit(1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
