#!/usr/bin/env python3
"""A small HTTPS (or HTTP) server on loopback for the net.fetch tests and benchmark.

    https_server.py [--cert PEM --key PEM] [--log FILE] [--silent] [--max-seconds N]

Listens on 127.0.0.1 on a free port and prints "port N" on stdout once it accepts.
It stops when its stdin reaches end of file (the test that started it closed the
pipe or died) or after --max-seconds (default 300), whichever comes first: it never
outlives its test for long.

--silent: a plain TCP listener that accepts connections and never answers (a TLS
handshake that never ends, for the connect timeout).

Routes (any method; HEAD gets the headers only):
  /ok              200 "hello", with X-Multi sent twice
  /kib             200, 1024 bytes of text (the benchmark)
  /bin             200, 256 bytes that are not UTF-8
  /size/N          200, N bytes with Content-Length
  /stream/N        200, N bytes chunked, no Content-Length
  /bighead         200 with one 20000-byte header
  /manyheaders     200 with 150 headers
  /redirect?to=URL&code=C   C (default 302) with Location: URL
  /slowbody        Content-Length 1000, then one byte every 200 ms
  /echo            200, JSON {method, path, headers, body} of the request
Each request is logged as "METHOD PATH idem=KEY" (KEY the Idempotency-Key header or
-) in --log, flushed at once.
"""
import argparse
import json
import socket
import ssl
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from server_lifetime import append_log_line, end_with_test, serve_loopback

ARGS = None


def log_request(method, path, key):
    if ARGS.log is not None:
        append_log_line(ARGS.log, f"{method} {path} idem={key or '-'}")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        # Headers and body go out in separate writes: without this, Nagle and the
        # client's delayed ACK hold the second one back 40 ms.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ARGS.context is not None:
            self.request.settimeout(30)
            self.request = ARGS.context.wrap_socket(self.request, server_side=True)
        super().setup()

    def log_message(self, fmt, *args):  # quiet
        pass

    def send_body(self, status, body, headers=(), content_type="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        url = urlsplit(self.path)
        path = url.path
        log_request(self.command, self.path, self.headers.get("Idempotency-Key"))
        if path == "/ok":
            self.send_body(200, b"hello", [("X-Multi", "1"), ("X-Multi", "2")])
        elif path == "/kib":
            self.send_body(200, (b"0123456789abcdef" * 64))
        elif path == "/bin":
            self.send_body(200, bytes(range(256)), content_type="application/octet-stream")
        elif path.startswith("/size/"):
            self.send_body(200, b"a" * int(path[6:]))
        elif path.startswith("/stream/"):
            n = int(path[8:])
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"a" * 65536
            while n > 0:
                part = chunk[: min(n, len(chunk))]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                n -= len(part)
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/bighead":
            self.send_body(200, b"x", [("X-Big", "b" * 20000)])
        elif path == "/manyheaders":
            self.send_body(200, b"x", [(f"X-H-{i}", str(i)) for i in range(150)])
        elif path == "/redirect":
            q = parse_qs(url.query)
            self.send_response(int(q.get("code", ["302"])[0]))
            self.send_header("Location", q["to"][0])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/slowbody":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            try:
                for _ in range(300):
                    self.wfile.write(b"s")
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass
            self.close_connection = True
        elif path == "/echo":
            doc = {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("utf-8", "replace"),
            }
            self.send_body(200, json.dumps(doc).encode(), content_type="application/json")
        else:
            self.send_body(404, b"no such route")

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


def silent(listener):
    held = []
    while True:
        conn, _ = listener.accept()
        held.append(conn)  # never read, never answered


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--log")
    p.add_argument("--silent", action="store_true")
    p.add_argument("--max-seconds", type=float, default=300)
    ARGS = p.parse_args()
    ARGS.context = None
    if ARGS.cert:
        ARGS.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ARGS.context.load_cert_chain(ARGS.cert, ARGS.key)

    end_with_test(ARGS.max_seconds)

    if ARGS.silent:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        print(f"port {listener.getsockname()[1]}", flush=True)
        silent(listener)
        return
    serve_loopback(Handler)


if __name__ == "__main__":
    main()
