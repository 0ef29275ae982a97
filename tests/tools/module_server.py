#!/usr/bin/env python3
"""A loopback HTTP endpoint module for tests/t_module_endpoint.c.

    module_server.py --log FILE [--unix PATH] [--max-seconds N]

Listens on 127.0.0.1 on a free port (or on the Unix socket PATH) and prints
"port N" (or "unix PATH") on stdout once it accepts. It stops when its stdin reaches
end of file (the test that started it closed the pipe or died) or after
--max-seconds (default 300): it never outlives its test for long.

Every request is logged, before it is answered, as one line
  "METHOD PATH idem=KEY ctype=TYPE body=BODY"
(KEY the Idempotency-Key header or -, BODY the request body on one line), flushed.

Routes (POST):
  /reply          200 {"result": {"request": <the request body as JSON>, "key": KEY}}
  /error          200 {"error": {"code": "no_such_ticket", "message": "ticket 7 is gone"}}
  /status/N       N with a {"result": 1} body (a non-2xx must not count as a reply)
  /redirect       302 to /reply (must not be followed)
  /big/N          200 {"result": "xxx..."} of N bytes in all
  /slow/MS        waits MS milliseconds, then as /reply (for the timeout)
  /notjson        200 "hello"
"""
import argparse
import json
import socket
import socketserver
import time
from http.server import BaseHTTPRequestHandler

from server_lifetime import append_log_line, end_with_test, serve_loopback

ARGS = None


def log_request(method, path, key, ctype, body):
    text = body.decode("utf-8", "replace").replace("\n", " ").strip()
    append_log_line(ARGS.log, f"{method} {path} idem={key or '-'} ctype={ctype or '-'} body={text}")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def address_string(self):  # a Unix peer has no address tuple
        return "local"

    def log_message(self, fmt, *args):  # quiet
        pass

    def send_body(self, status, body, headers=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def reply(self, body, key):
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        self.send_body(200, json.dumps({"result": {"request": request, "key": key}}).encode())

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        key = self.headers.get("Idempotency-Key")
        log_request("POST", self.path, key, self.headers.get("Content-Type"), body)
        path = self.path
        if path == "/reply" or path == "/":
            self.reply(body, key)
        elif path == "/error":
            self.send_body(200, b'{"error": {"code": "no_such_ticket", "message": "ticket 7 is gone"}}')
        elif path.startswith("/status/"):
            self.send_body(int(path[len("/status/"):]), b'{"result": 1}')
        elif path == "/redirect":
            self.send_body(302, b'{"result": "redirected"}', [("Location", "/reply")])
        elif path.startswith("/big/"):
            n = int(path[len("/big/"):])
            self.send_body(200, b'{"result": "' + b"x" * max(0, n - 14) + b'"}')
        elif path.startswith("/slow/"):
            time.sleep(int(path[len("/slow/"):]) / 1000.0)
            self.reply(body, key)
        elif path == "/notjson":
            self.send_body(200, b"hello")
        else:
            self.send_body(404, b"{}")


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--log", required=True)
    p.add_argument("--unix")
    p.add_argument("--max-seconds", type=float, default=300)
    ARGS = p.parse_args()

    end_with_test(ARGS.max_seconds)

    if ARGS.unix:
        server = UnixServer(ARGS.unix, Handler)
        print(f"unix {ARGS.unix}", flush=True)
        server.serve_forever()
    else:
        serve_loopback(Handler)


if __name__ == "__main__":
    main()
