#!/usr/bin/env python3
"""The status page (docs/web.md) against a real serve --web and headless Chromium
(tests/t_web.sh runs it). One line per check, "ok - NAME" or "not ok - NAME: detail".

The store holds real flows and runs made through the CLI: "xss" returns the text
<img src=x onerror=alert(1)> (and, in a second run, an <img> aimed at a loopback
listener of this test), "hold" blocks in a module call on a FIFO this test holds, so
that later runs of it wait pending for a cancel. Guards, each by the check that
would turn red without it:

  [guard web-auth-401]        no or a wrong session cookie: 401 and no flow id in the body
  [guard web-login-once]      a login code works once; a spent or wrong one is 401
  [guard web-csrf]            a POST with the cookie but without the CSRF token is
                              refused and the run stays pending
  [guard web-loopback]        serve --web on a non-loopback address is refused
  [guard web-escape]          the script's <img ...> result is text: no img element,
                              no dialog, no request to the listener (with a control
                              showing the browser does reach the listener when asked)
  [guard web-headers]         CSP, nosniff, frame denial, no-referrer, no-store
  [guard web-token-private]   a web-token file with group or other bits is refused
"""
import argparse
import http.client
import json
import os
import select
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp  # noqa: E402

failures = 0
SERVES = []  # every serve started, for its log when the harness itself fails


LABEL = ""


def ok(cond, name, detail=""):
    global failures
    name = "web (%s): %s" % (LABEL, name) if LABEL else name
    if cond:
        print("ok - " + name, flush=True)
    else:
        failures += 1
        print("not ok - %s: %s" % (name, str(detail).replace("\n", " ")[:600]), flush=True)
    return cond


def cli(args, home, check=True, env=None, timeout=120):
    r = subprocess.run([BIN + "/ck-basal", "--home", home] + args, capture_output=True,
                       text=True, timeout=timeout, env=env)
    if check and r.returncode != 0:
        raise RuntimeError("ck-basal %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return r


def install_flow(home, root, fid, script, extra=""):
    d = os.path.join(root, "flow-" + fid)
    os.makedirs(d)
    with open(os.path.join(d, "flow.js"), "w") as f:
        f.write(script)
    with open(os.path.join(d, "manifest.json"), "w") as f:
        f.write('{"format":1,"id":"%s","version":1,"purpose":"web test",'
                '"trigger":{"manual":true}%s}' % (fid, extra))
    code_hash = json.loads(cli(["--json", "flow", "install", d], home).stdout)["code_hash"]
    cli(["flow", "approve", fid, "--version", "1", "--code-hash", code_hash], home)


def fetch(base, method, path, cookie=None, body=None, headers=None):
    u = urllib.parse.urlparse(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    h = dict(headers or {})
    if cookie is not None:
        h["Cookie"] = "basal_web=" + cookie
    if body is not None:
        h.setdefault("Content-Type", "application/x-www-form-urlencoded")
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read().decode("utf-8", "replace")
    out = (r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    c.close()
    return out


class Serve:
    """ck-basal serve with --web, waited for by its "ready" log line (a pipe)."""

    def __init__(self, home, args):
        self.p = subprocess.Popen([BIN + "/ck-basal", "--home", home, "serve"] + args,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        self.log = []
        SERVES.append(self)
        self.ready_seen = threading.Event()
        # Its log is read to the end by a thread of its own: a full pipe would block it.
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.ready_seen.wait(60)

    def _read(self):
        for line in self.p.stderr:
            self.log.append(line)
            if "event=ready" in line:
                self.ready_seen.set()
        self.ready_seen.set()

    @property
    def ready(self):
        return any("event=ready" in line for line in self.log)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.reader.join(30)
        return self.p.returncode


def wait_line(fd, deadline):
    """One line from a FIFO opened non-blocking, or None at the deadline."""
    data = b""
    while b"\n" not in data:
        r, _, _ = select.select([fd], [], [], max(0, deadline - time.monotonic()))
        if not r:
            return None
        chunk = os.read(fd, 256)
        if chunk:
            data += chunk
    return data.decode()


def runs_json(home, flow=None):
    return json.loads(cli(["--json", "runs"] + ([flow] if flow else []), home).stdout)


def run_state(home, run):
    return json.loads(cli(["--json", "journal", str(run)], home).stdout)["state"]


def wait_state(home, run, want, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = run_state(home, run)
        if state == want:
            return state
        time.sleep(0.05)  # the store has no change notification: a poll with a deadline
    return run_state(home, run)


def audit_rows(home, run):
    db = sqlite3.connect("file:%s/basal.db?mode=ro" % home, uri=True)
    rows = db.execute("SELECT flow_id, position, kind, decision, reason FROM audit WHERE run_id = ?"
                      " ORDER BY id", (run,)).fetchall()
    db.close()
    return rows


def main():
    global BIN, LABEL
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", default="")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--module", required=True)
    ap.add_argument("--chromium", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--docs", required=True)
    a = ap.parse_args()
    BIN = os.path.abspath(a.bin)
    LABEL = a.label
    root = a.scratch
    home = os.path.join(root, "home")

    # --- the store: real flows and runs through the CLI ------------------------------
    setup = cli(["setup"], home)
    token_path = os.path.join(home, "web-token")
    st = os.lstat(token_path) if os.path.exists(token_path) else None
    token = open(token_path).read().strip() if st else ""
    ok(st is not None and stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and
       len(token) == 64 and all(c in "0123456789abcdef" for c in token),
       "setup makes the web token: 0600, 64 hex digits", setup.stdout)

    fifo = os.path.join(root, "hold.fifo")
    os.mkfifo(fifo, 0o600)
    with open(os.path.join(home, "modules.json"), "w") as f:
        json.dump({"modules": {"blocker": {"program": os.path.abspath(a.module),
                                           "args": ["--log", os.path.join(root, "module.log")],
                                           "timeout_ms": 60000,
                                           "ops": {"hold": {"kind": "query"},
                                                   "echo": {"kind": "mutate"}}}}}, f)
    os.chmod(os.path.join(home, "modules.json"), 0o600)
    install_flow(home, root, "xss", 'return trigger.html ?? "<img src=x onerror=alert(1)>";\n')
    install_flow(home, root, "hold", "return await ops.call('blocker', 'hold', {fifo: trigger.fifo});\n",
                 ', "ops": [{"module": "blocker", "op": "hold"}]')
    first = json.loads(cli(["--json", "run", "xss"], home).stdout)
    ok(first.get("result") == "<img src=x onerror=alert(1)>", "the xss flow's run returns the markup as text",
       first)

    # A listener the escaped page must never reach.
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    probe.listen(8)
    probe_port = probe.getsockname()[1]
    probe_html = "<img src=http://127.0.0.1:%d/leak onerror=alert(2)>" % probe_port
    second = json.loads(cli(["--json", "run", "xss", "--trigger", json.dumps({"html": probe_html})],
                            home).stdout)
    xss_run, probe_run = first["run"], second["run"]

    # Two runs left in doubt: killed after an unkeyed mutation was performed, before its
    # outcome was stored; the serve's recovery puts each in needs_reconcile.
    doubt_runs = []
    for fid in ("doubt1", "doubt2"):
        install_flow(home, root, fid, "return await ops.call('blocker', 'echo', {n: 1});\n",
                     ', "ops": [{"module": "blocker", "op": "echo"}]')
        env = dict(os.environ, BASAL_TEST_KILL_AT="after_dispatch:0")
        r = cli(["run", fid], home, check=False, env=env)
        doubt_runs.append(runs_json(home, fid)[0]["run"])
        ok(r.returncode == -9, "run %s: the parent died after the mutation" % fid, r.returncode)

    # --- refusals before anything listens ---------------------------------------------
    other = os.path.join(root, "other")
    cli(["setup"], other)
    for addr in ("0.0.0.0:0", "192.0.2.1:8080", "[::]:0", "localhost:8080"):
        try:
            r = cli(["serve", "--web", addr], other, check=False, timeout=20)
        except subprocess.TimeoutExpired:  # it served instead of refusing
            r = subprocess.CompletedProcess([], -1, "", "still running after 20 s")
        ok(r.returncode == 1 and len(r.stderr.strip().splitlines()) >= 1 and
           ("not loopback" in r.stderr or "names are not resolved" in r.stderr),
           "serve --web %s is refused [guard web-loopback]" % addr, "exit %d: %s" % (r.returncode, r.stderr))
    r = cli(["serve", "--web-allow-remote"], other, check=False)
    ok(r.returncode == 2 and "--web-allow-remote needs --web" in r.stderr,
       "--web-allow-remote without --web is a usage error", r.stderr)
    r = cli(["web-url"], other, check=False)
    ok(r.returncode == 1 and "no serve --web runs" in r.stderr and
       not os.path.exists(os.path.join(other, "web-login")),
       "web-url without a serve --web: refused, nothing written", r.stderr)

    # A web-address a killed serve left behind: no live serve, no URL.
    with open(os.path.join(other, "web-address"), "w") as f:
        f.write("http://127.0.0.1:1\n")
    os.chmod(os.path.join(other, "web-address"), 0o600)
    r = cli(["web-url"], other, check=False)
    ok(r.returncode == 1 and "no serve --web runs" in r.stderr and
       not os.path.exists(os.path.join(other, "web-login")),
       "web-url with a stale web-address and no serve: refused, nothing written", r.stderr)
    os.unlink(os.path.join(other, "web-address"))

    # A token file others could read is refused, never used or replaced.
    other_token = os.path.join(other, "web-token")
    before = open(other_token).read()
    os.chmod(other_token, 0o644)
    try:
        r = cli(["serve", "--web", "127.0.0.1:0"], other, check=False, timeout=20)
    except subprocess.TimeoutExpired:  # it served with the readable token
        r = subprocess.CompletedProcess([], -1, "", "still running after 20 s")
    s_r = cli(["setup"], other, check=False)
    ok(r.returncode == 1 and "web-token is not an owner-only regular file" in r.stderr and
       s_r.returncode == 1 and open(other_token).read() == before and
       stat.S_IMODE(os.stat(other_token).st_mode) == 0o644,
       "a web-token others can read: serve --web and setup refuse, the file unchanged [guard web-token-private]",
       (r.returncode, r.stderr[-200:], s_r.returncode, s_r.stderr))
    os.chmod(other_token, 0o600)

    # Remote allowed: the control of the loopback guard (the same serve starts).
    remote = Serve(other, ["--web", "0.0.0.0:0", "--web-allow-remote"])
    ok(remote.ready, "serve --web 0.0.0.0:0 --web-allow-remote starts (control)", "".join(remote.log))
    ok(remote.stop() == 0, "that serve stops", "".join(remote.log))

    # --- a serve with the page --------------------------------------------------------
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    serve = Serve(home, ["--web", "127.0.0.1:0"])
    if not ok(serve.ready, "serve --web 127.0.0.1:0 is ready", "".join(serve.log)):
        serve.stop()
        return
    base = open(os.path.join(home, "web-address")).read().strip()
    ok(base.startswith("http://127.0.0.1:"), "web-address names the bound loopback port", base)

    hold_run = json.loads(cli(["--json", "run", "hold", "--detach", "--trigger", json.dumps({"fifo": fifo})],
                              home).stdout)["run"]
    held = wait_line(reader, time.monotonic() + 60)
    ok(held is not None and held.startswith("hold "), "the hold run is in its module call", held)
    pending = []
    for _ in range(3):
        out = json.loads(cli(["--json", "run", "hold", "--detach", "--trigger", json.dumps({"fifo": fifo})],
                             home).stdout)
        pending.append(out["run"])
    ok(all(run_state(home, p) == "pending" for p in pending), "three later hold runs wait pending", pending)

    # --- authentication, without a browser ---------------------------------------------
    status, headers, body = fetch(base, "GET", "/flows")
    ok(status == 401 and "xss" not in body and "hold" not in body,
       "no cookie: 401 and no flow shown [guard web-auth-401]", "%d %s" % (status, body[:200]))
    status, _, body = fetch(base, "GET", "/run?id=%d" % xss_run, cookie="0" * 64)
    ok(status == 401 and "onerror" not in body, "a wrong cookie: 401 [guard web-auth-401]", status)
    status, _, _ = fetch(base, "GET", "/style.css")
    ok(status == 401, "even the stylesheet needs the cookie", status)
    status, _, _ = fetch(base, "GET", "/login?code=" + "a" * 64)
    ok(status == 401, "a wrong login code: 401 [guard web-login-once]", status)
    url = cli(["web-url"], home).stdout.strip()
    path = url[len(base):]
    status, headers, _ = fetch(base, "GET", path)
    cookie_header = headers.get("set-cookie", "")
    ok(status == 303 and cookie_header.startswith("basal_web=" + token + ";") and
       "HttpOnly" in cookie_header and "SameSite=Strict" in cookie_header and headers.get("location") == "/flows",
       "the login URL sets the HttpOnly SameSite=Strict cookie and redirects", "%d %s" % (status, headers))
    status, _, _ = fetch(base, "GET", path)
    ok(status == 401, "the same login URL a second time: 401 [guard web-login-once]", status)

    status, headers, body = fetch(base, "GET", "/flows", cookie=token)
    csp = headers.get("content-security-policy", "")
    ok(status == 200 and "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and
       "script-src 'self'" in csp and "unsafe-inline" not in csp and
       headers.get("x-content-type-options") == "nosniff" and headers.get("x-frame-options") == "DENY" and
       headers.get("referrer-policy") == "no-referrer" and headers.get("cache-control") == "no-store",
       "the page's headers: strict CSP, nosniff, no framing, no referrer, no-store [guard web-headers]",
       headers)

    # CSRF: the cookie alone does not cancel.
    victim = pending[0]
    status, _, body = fetch(base, "POST", "/run/cancel", cookie=token, body="run=%d" % victim)
    ok(status == 403 and run_state(home, victim) == "pending",
       "a POST without the CSRF token is refused, the run stays pending [guard web-csrf]",
       "%d %s" % (status, body))
    status, _, _ = fetch(base, "POST", "/run/cancel", cookie=token, body="run=%d&csrf=%s" % (victim, "0" * 64))
    ok(status == 403 and run_state(home, victim) == "pending", "a wrong CSRF token is refused [guard web-csrf]",
       status)
    status, _, _ = fetch(base, "GET", "/run/cancel?run=%d" % victim, cookie=token)
    ok(status == 404 and run_state(home, victim) == "pending", "a GET changes nothing", status)

    # --- the browser -------------------------------------------------------------------
    profile = tempfile.mkdtemp(dir=root)
    try:
        browser = cdp.Browser(a.chromium, profile)
    except Exception as e:  # a browser that cannot run fails the test
        ok(False, "headless chromium starts", e)
        serve.stop()
        return
    try:
        browse(browser, base, home, a.docs, xss_run, probe_run, probe, pending, doubt_runs)
    finally:
        browser.close()
        os.close(reader)  # the hold run goes on
    ok(wait_state(home, hold_run, "succeeded") == "succeeded", "the held run ends once the FIFO is closed",
       run_state(home, hold_run))
    code = serve.stop()
    ok(code == 0 and not os.path.exists(os.path.join(home, "web-address")),
       "serve stops and removes web-address",
       "exit %s; its log ends: %s" % (code, " | ".join(l.strip() for l in serve.log[-6:])))

    # The CLI's reconcile of the other run in doubt, with no serve running (the CLI then
    # drives the run itself): the same audit row as the page's.
    page_doubt, cli_doubt = doubt_runs
    out = json.loads(cli(["--json", "flow", "reconcile", str(cli_doubt), "0", "--observed",
                          '{"seen": "<b>yes</b>"}'], home).stdout)
    page_audit = [row[1:] for row in audit_rows(home, page_doubt) if row[2] == "reconcile"]
    cli_audit = [row[1:] for row in audit_rows(home, cli_doubt) if row[2] == "reconcile"]
    ok(out.get("result") == {"seen": "<b>yes</b>"} and len(page_audit) == 1 and page_audit == cli_audit,
       "the page's reconcile is audited exactly as the CLI's", (out, page_audit, cli_audit))


def browse(b, base, home, docs, xss_run, probe_run, probe, pending, doubt_runs):
    dialogs = lambda: [e for e in b.events if e["method"] == "Page.javascriptDialogOpening"]
    url = cli(["web-url"], home).stdout.strip()
    b.navigate(url)
    ok(b.evaluate("location.pathname") == "/flows", "the login URL lands on the flows page",
       b.evaluate("location.href"))
    flows = b.evaluate("[...document.querySelectorAll('#flows tr.flow td:first-child')].map(td => td.textContent)")
    listed = json.loads(cli(["--json", "flow", "list"], home).stdout)
    ok(sorted(flows or []) == sorted(f["id"] for f in listed) and "xss" in flows,
       "the flows page lists the store's flows", flows)
    hashes = b.evaluate("[...document.querySelectorAll('#flows tr.flow td.text')].map(td => td.textContent)")
    want = sorted(f["approved_code_hash"] for f in listed)
    ok(sorted(hashes or []) == want, "each flow's approved code hash as flow list has it", (hashes, want))
    b.screenshot(os.path.join(docs, "web-flows.png"))

    b.navigate(base + "/runs")
    rows = b.evaluate("[...document.querySelectorAll('#runs tr.run td:first-child')].map(td => td.textContent)")
    store_runs = sorted((str(r["run"]) for r in runs_json(home)), key=lambda x: -int(x))
    ok(rows == store_runs, "the runs page lists every run, newest first", (rows, store_runs))
    b.navigate(base + "/runs?flow=hold&state=pending")
    rows = b.evaluate("[...document.querySelectorAll('#runs tr.run td:first-child')].map(td => td.textContent)")
    ok(rows == [str(p) for p in reversed(pending)], "the runs page filters by flow and state", rows)
    b.navigate(base + "/runs")
    b.screenshot(os.path.join(docs, "web-runs.png"))

    # The script's markup is text.
    b.navigate(base + "/run?id=%d" % xss_run)
    shown = b.evaluate("document.getElementById('run-result').textContent")
    ok(shown == '"<img src=x onerror=alert(1)>"', "the run page shows the result's markup as text", shown)
    ok(b.evaluate("document.querySelectorAll('img').length") == 0 and not dialogs(),
       "no img element and no dialog on the run page [guard web-escape]",
       (b.evaluate("document.body.innerHTML.length"), dialogs()))
    b.screenshot(os.path.join(docs, "web-run.png"))

    mark = len(b.events)
    b.navigate(base + "/run?id=%d" % probe_run)
    shown = b.evaluate("document.getElementById('run-result').textContent")
    leaked = [e["params"]["request"]["url"] for e in b.events[mark:]
              if e["method"] == "Network.requestWillBeSent" and not e["params"]["request"]["url"].startswith(base)]
    r, _, _ = select.select([probe], [], [], 0)
    ok(shown == json.dumps("<img src=http://127.0.0.1:%d/leak onerror=alert(2)>" % probe.getsockname()[1])
       and not leaked and not r and not dialogs() and b.evaluate("document.images.length") == 0,
       "an <img> aimed at a loopback listener: shown as text, no request, no dialog [guard web-escape]",
       (shown, leaked, bool(r)))
    # Control: the same browser does reach the listener when sent there.
    mark = len(b.events)
    # Sent without waiting: Page.navigate answers only once the listener has replied.
    b.send("Page.navigate", {"url": "http://127.0.0.1:%d/control" % probe.getsockname()[1]})
    r, _, _ = select.select([probe], [], [], 30)
    got = ""
    if r:
        conn, _ = probe.accept()
        conn.settimeout(10)
        try:
            got = conn.recv(4096).decode("latin-1")
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        finally:
            conn.close()
    ok(bool(r) and "GET /control" in got, "control: the browser reaches the listener when it is the page",
       "no connection" if not r else got[:80])
    b.wait_event("Page.loadEventFired", time.monotonic() + 30, mark)

    # A cancel from the page, audited as the CLI's.
    page_run, cli_run = pending[1], pending[2]
    b.navigate(base + "/run?id=%d" % page_run)
    mark = len(b.events)
    b.evaluate("document.querySelector('form.cancel input[name=reason]').value = 'operator looked'; "
               "document.getElementById('cancel').click(); true")
    b.wait_event("Page.loadEventFired", time.monotonic() + 30, mark)
    ok(b.evaluate("document.getElementById('run-state').textContent") == "cancelled" and
       b.evaluate("location.pathname + location.search") == "/run?id=%d" % page_run,
       "the page's cancel button cancels the run and shows it", b.evaluate("document.body.innerText.slice(0, 300)"))
    cli(["cancel", str(cli_run), "--reason", "operator looked"], home)
    page_audit, cli_audit = audit_rows(home, page_run), audit_rows(home, cli_run)
    ok(len(page_audit) == 1 and page_audit == cli_audit and page_audit[0][2] == "cancel" and
       "operator looked" in (page_audit[0][4] or ""),
       "the page's cancel is audited exactly as the CLI's", (page_audit, cli_audit))

    # A reconcile from the page; the serve resumes the run with the observed value.
    page_doubt = doubt_runs[0]
    ok(wait_state(home, page_doubt, "needs_reconcile") == "needs_reconcile" and
       wait_state(home, doubt_runs[1], "needs_reconcile") == "needs_reconcile",
       "the serve's recovery leaves both runs in doubt in needs_reconcile",
       [run_state(home, r) for r in doubt_runs])
    b.navigate(base + "/run?id=%d" % page_doubt)
    mark = len(b.events)
    forms = b.evaluate("document.querySelectorAll('form.reconcile').length")
    b.evaluate("const f = document.querySelector('form.reconcile'); "
               "f.querySelector('[name=decision]').value = 'observed'; "
               "f.querySelector('[name=observed]').value = '{\"seen\": \"<b>yes</b>\"}'; "
               "f.querySelector('button').click(); true")
    b.wait_event("Page.loadEventFired", time.monotonic() + 30, mark)
    end = wait_state(home, page_doubt, "succeeded")
    result = json.loads(cli(["--json", "journal", str(page_doubt)], home).stdout)["result"]
    ok(forms == 1 and end == "succeeded" and result == {"seen": "<b>yes</b>"},
       "the page's reconcile settles the call; the serve resumes the run with the observed value",
       (forms, end, result))
    b.navigate(base + "/run?id=%d" % page_doubt)
    ok(b.evaluate("document.querySelectorAll('b').length") == 0 and
       "<b>yes</b>" in b.evaluate("document.getElementById('run-result').textContent"),
       "the observed value's markup is text on the run page [guard web-escape]", "")

    # Live updates: a new run appears without a reload, polling stops while hidden.
    b.navigate(base + "/runs")
    b.evaluate("window.notReloaded = true")
    before = b.evaluate("document.querySelectorAll('#runs tr.run').length")
    new_run = json.loads(cli(["--json", "run", "xss"], home).stdout)["run"]
    try:
        b.wait_true("document.querySelector('#runs tr.run td:first-child').textContent === '%d'" % new_run,
                    "the new run on the page")
        appeared = True
    except cdp.Timeout:
        appeared = False
    ok(appeared and b.evaluate("window.notReloaded === true") and
       b.evaluate("document.querySelectorAll('#runs tr.run').length") == before + 1 and
       ("(%d runs)" % (before + 1)) in b.evaluate("document.querySelector('#runs .pages').textContent"),
       "the runs page shows a new run and its count without a reload", before)
    b.screenshot(os.path.join(docs, "web-runs.png"))
    b.evaluate("Object.defineProperty(document, 'hidden', {configurable: true, get: () => true}); "
               "document.dispatchEvent(new Event('visibilitychange')); true")
    mark = len(b.events)
    # Absence of requests can only be seen over a window: two and a half intervals.
    try:
        b.wait_event("Network.requestWillBeSent", time.monotonic() + 7.5, mark)
        quiet = False
    except cdp.Timeout:
        quiet = True
    ok(quiet, "no polling while the tab is hidden", b.events[mark:][:2])
    b.evaluate("Object.defineProperty(document, 'hidden', {configurable: true, get: () => false}); "
               "document.dispatchEvent(new Event('visibilitychange')); true")
    _, event = b.wait_event("Network.requestWillBeSent", time.monotonic() + 30, mark)
    ok("/runs/table" in event["params"]["request"]["url"], "polling resumes when the tab is shown again",
       event["params"]["request"]["url"])

    b.navigate(base + "/health")
    bars = b.evaluate("document.querySelectorAll('#chart rect.bar').length")
    succeeded = sum(1 for r in runs_json(home) if r["state"] == "succeeded")
    counted = b.evaluate("[...document.querySelectorAll('#chart rect.bar[data-state=succeeded] title')]"
                         ".map(t => parseInt(t.textContent)).reduce((a, b) => a + b, 0)")
    ok(bars >= 1 and counted == succeeded, "the health chart counts the last hour's runs by state",
       (bars, counted, succeeded))
    ok(b.evaluate("document.getElementById('health').textContent.includes('run_states')"),
       "the health page shows the store's counters", "")
    b.screenshot(os.path.join(docs, "web-health.png"))
    shots = [os.path.join(docs, "web-%s.png" % p) for p in ("flows", "runs", "run", "health")]
    ok(all(open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n" for p in shots), "a screenshot of each page",
       shots)
    ok(not dialogs(), "no dialog opened on any page", dialogs())


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # any failure of the harness itself is a failure, not a skip
        ok(False, "web test", repr(e))
        for serve in SERVES:
            sys.stdout.write("".join("# " + line for line in serve.log[-30:]))
    finally:
        for serve in SERVES:  # none outlives the test, whatever failed
            if serve.p.poll() is None:
                serve.p.kill()
                serve.p.wait()
    sys.exit(1 if failures else 0)
