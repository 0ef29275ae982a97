"""The lifetime of a test's helper server (it never outlives the test), and what the
loopback HTTP servers of tests/tools share: their request log and their listener."""
import os
import sys
import threading
from http.server import ThreadingHTTPServer

LOG_LOCK = threading.Lock()


def end_with_test(max_seconds):
    """Exits the process when stdin ends (the test closed it or died) or after
    max_seconds, whichever comes first."""

    def watch_stdin():
        while sys.stdin.buffer.read(4096):
            pass
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    threading.Timer(max_seconds, lambda: os._exit(0)).start()


def append_log_line(path, line):
    """Appends line to the log at path, flushed at once: the test reads the log while the
    server runs, and requests are answered on threads of their own."""
    with LOG_LOCK, open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()


def serve_loopback(handler):
    """Serves HTTP with handler on 127.0.0.1, a free port, a thread a request, after
    printing "port N" on stdout (the test waits for that line)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()
