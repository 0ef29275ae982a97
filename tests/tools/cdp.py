"""A small DevTools-protocol client for headless Chromium (tests/t_web_browser.py).

Standard library only: Chromium is started with --remote-debugging-port=0, the
browser's WebSocket address is read from its stderr, and one page target is attached
with a flat session. Every wait has a deadline; nothing sleeps.
"""
import base64
import json
import os
import re
import select
import socket
import struct
import subprocess
import time
import urllib.parse


class Timeout(Exception):
    pass


class WebSocket:
    """RFC 6455, client side, text frames only (what the protocol uses)."""

    def __init__(self, url, deadline):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=max(0.1, deadline - time.monotonic()))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\n"
                           f"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self._fill(deadline)
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError("websocket handshake refused: %r" % head[:80])

    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Timeout("websocket read")
        r, _, _ = select.select([self.sock], [], [], left)
        if not r:
            raise Timeout("websocket read")
        data = self.sock.recv(1 << 16)
        if not data:
            raise RuntimeError("the browser closed the connection")
        self.buf += data

    def _need(self, n, deadline):
        while len(self.buf) < n:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def recv(self, deadline):
        message = b""
        while True:
            b0, b1 = self._need(2, deadline)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._need(2, deadline))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._need(8, deadline))[0]
            data = self._need(n, deadline)
            opcode = b0 & 0x0F
            if opcode == 8:
                raise RuntimeError("the browser closed the websocket")
            if opcode in (9, 10):  # ping, pong: not used by Chromium here
                continue
            message += data
            if b0 & 0x80:
                return message.decode()


class Browser:
    def __init__(self, chromium, profile, timeout_s=60):
        self.timeout_s = timeout_s
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--window-size=1200,800",
             "--user-data-dir=" + profile, "--remote-debugging-port=0", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout_s
        url, seen = None, b""
        while url is None:
            left = deadline - time.monotonic()
            r, _, _ = select.select([self.proc.stderr], [], [], max(0, left))
            if not r:
                self.close()
                raise Timeout("chromium printed no DevTools address: %r" % seen[-300:])
            chunk = os.read(self.proc.stderr.fileno(), 4096)
            if not chunk:
                self.close()
                raise RuntimeError("chromium exited: %r" % seen[-300:])
            seen += chunk
            m = re.search(rb"DevTools listening on (ws://\S+)", seen)
            if m:
                url = m.group(1).decode()
        self.ws = WebSocket(url, deadline)
        self.next_id = 0
        self.events = []
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Page", "Network", "Runtime"):
            self.call(domain + ".enable")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def send(self, method, params=None, session=True):
        """Sends a command without waiting for its reply (its reply is then dropped)."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))

    def call(self, method, params=None, session=True):
        self.send(method, params, session)
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = json.loads(self.ws.recv(deadline))
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method, deadline, start=0):
        """The first event named method at or after index start of self.events."""
        while True:
            for i in range(start, len(self.events)):
                if self.events[i]["method"] == method:
                    return i, self.events[i]
            start = len(self.events)
            reply = json.loads(self.ws.recv(deadline))
            if "method" in reply:
                self.events.append(reply)

    def navigate(self, url):
        """Loads url (following redirects) and waits for its load event."""
        mark = len(self.events)
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired", time.monotonic() + self.timeout_s, mark)

    def evaluate(self, expression):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError("evaluate %s: %s" % (expression, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait_true(self, expression, what):
        """Polls expression (with a deadline) until it is true, handling events meanwhile."""
        deadline = time.monotonic() + self.timeout_s
        while not self.evaluate(expression):
            if time.monotonic() > deadline:
                raise Timeout(what)
            # Wait for any event (a request, a load) rather than a fixed time; at worst
            # a short tick so a change without an event is still seen.
            try:
                reply = json.loads(self.ws.recv(min(deadline, time.monotonic() + 0.25)))
                if "method" in reply:
                    self.events.append(reply)
            except Timeout:
                pass

    def screenshot(self, path):
        height = self.evaluate("Math.min(2000, document.documentElement.scrollHeight)")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1200, "height": max(400, int(height)), "deviceScaleFactor": 1, "mobile": False})
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
