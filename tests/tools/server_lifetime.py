"""The lifetime of a test's helper server: it never outlives the test."""
import os
import sys
import threading


def end_with_test(max_seconds):
    """Exits the process when stdin ends (the test closed it or died) or after
    max_seconds, whichever comes first."""

    def watch_stdin():
        while sys.stdin.buffer.read(4096):
            pass
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    threading.Timer(max_seconds, lambda: os._exit(0)).start()
