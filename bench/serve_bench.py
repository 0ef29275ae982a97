#!/usr/bin/env python3
"""serve throughput (issue 11), in one run, printed as a markdown table.

  bench/serve_bench.py [--scale X]

Through `ck-basal serve --max-runs 16 --rate-limit 100000` (release build), with a
client speaking the ops protocol directly (docs/ops-protocol.md) so that no CLI process
start is counted:
  - trivial runs (`return 1`) per second with 1, 4 and 16 flows busy, each flow's
    worker already started (every flow ran once before): each flow gets its runs
    admitted with detach but the last, a `run` that waits for its end;
  - the in-process floor: `ck-basal exec --repeat N` of the same script (one pool, no
    store), two at once so both CPUs work;
  - durable kv.set per second: a flow making 50 kv.set calls, one flow alone
    (sequential) and 16 flows at once;
  - the admission latency of the 16-flow runs: each request sent (a connection of its
    own, as a client makes) to its reply, which comes once the run is durable;
  - one serve's memory with 10,000 runs queued (a serve of its own, --max-runs 1, its
    one runner held by a run whose module call waits on a FIFO; the runs admitted with
    detach by 16 clients over 16 other flows): VmRSS and VmHWM from /proc/PID/status.
A measurement, not a test: the exit status says only whether it ran.
"""
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CK = os.path.join(ROOT, "build/bin/ck-basal")
RATE_LIMIT_MAX = 100000  # ADMISSION_RATE_LIMIT_MAX, src/serve/admission_rate.h


def ck(home, *args, json_out=False):
    argv = [CK] + (["--json"] if json_out else []) + ["--home", home] + list(args)
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


class Client:
    """One kept ops-socket connection: many requests, one at a time or pipelined (the
    replies come in the order of the requests, docs/ops-protocol.md)."""

    def __init__(self, home):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(os.path.join(home, "ops.sock"))
        self.buf = b""

    def send(self, cmd, args):
        self.sock.sendall((json.dumps({"cmd": cmd, "args": args}) + "\n").encode())

    def reply(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("serve closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        reply = json.loads(line)
        if not reply.get("ok"):
            raise RuntimeError(f"{reply.get('error')}")
        return reply.get("data")

    def request(self, cmd, args):
        self.send(cmd, args)
        return self.reply()

    def close(self):
        self.sock.close()


def request(home, cmd, args):
    c = Client(home)
    try:
        return c.request(cmd, args)
    finally:
        c.close()


def add_flow(home, work, fid, script, ops=None):
    d = os.path.join(work, "flow-" + fid)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "flow.js"), "w") as f:
        f.write(script)
    manifest = {"format": 1, "id": fid, "version": 1, "purpose": "bench",
                "trigger": {"manual": True}}
    if ops is not None:
        manifest["ops"] = ops
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    out = json.loads(ck(home, "flow", "install", d, json_out=True))
    ck(home, "flow", "approve", fid, "--version", "1", "--code-hash", out["code_hash"])


def start_serve(home, *extra):
    """serve, once its event=ready line came; its log is read to the end by a thread
    (serve_log_line waits on it)."""
    p = subprocess.Popen([CK, "--home", home, "serve"] + list(extra), stderr=subprocess.PIPE,
                         text=True)
    for line in p.stderr:
        if "event=ready" in line:
            break
    p.log_lines = []
    p.log_changed = threading.Condition()

    def read_log():
        for line in p.stderr:
            with p.log_changed:
                p.log_lines.append(line)
                p.log_changed.notify_all()

    threading.Thread(target=read_log, daemon=True).start()
    return p


def serve_log_line(p, needle, timeout=120):
    """Waits for a line of serve's log holding needle; raises if none comes in time."""
    with p.log_changed:
        if not p.log_changed.wait_for(lambda: any(needle in l for l in p.log_lines), timeout):
            raise RuntimeError(f"serve logged no {needle} within {timeout} s")


def through_serve(home, flows, runs_per_flow, latencies=None):
    """Admits runs_per_flow runs of each flow, all but the last with detach; the last is
    a `run` that waits for its end, and a flow's runs start in admission order, so its
    reply means the flow's runs have all ended. Runs/s. The flows stay enabled and keep
    their workers (a drain would end them). With a list, appends each detached
    admission's latency (s): the request sent (its connection opened) to the reply
    read, which serve sends once the run is durable."""
    start = time.monotonic()

    def admit(fid):
        c = Client(home)
        for i in range(runs_per_flow - 1):
            sent = time.monotonic()
            c.request("run", {"flow": fid, "trigger": "{}", "detach": True})
            if latencies is not None:
                latencies.append(time.monotonic() - sent)
        c.request("run", {"flow": fid, "trigger": "{}", "detach": False})
        c.close()

    threads = [threading.Thread(target=admit, args=(f,)) for f in flows]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(flows) * runs_per_flow / (time.monotonic() - start)


def pipelined_admissions(home, flows, count, window=16):
    """One client, one connection: count detached admissions over the flows in turn,
    up to window unanswered at once (OPS_PIPELINE_MAX), then a waiting run per flow (a
    flow's runs start in admission order). Admissions/s (the first send to the last
    detached reply) and runs/s (to the last run's end)."""
    c = Client(home)
    start = time.monotonic()
    sent = answered = 0
    while answered < count:
        while sent < count and sent - answered < window:
            c.send("run", {"flow": flows[sent % len(flows)], "trigger": "{}", "detach": True})
            sent += 1
        c.reply()
        answered += 1
    admitted = count / (time.monotonic() - start)
    for fid in flows:
        c.send("run", {"flow": fid, "trigger": "{}", "detach": False})
    for fid in flows:
        c.reply()
    ended = (count + len(flows)) / (time.monotonic() - start)
    c.close()
    return admitted, ended


# The module program of the memory phase: reads its request, then waits until the
# bench opens the FIFO (argv[1]) and closes it; its call holds serve's one runner.
HOLD_MODULE = """import sys
sys.stdin.read()
with open(sys.argv[1]) as f:
    f.read()
print('{"result": 1}')
"""


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def queued_memory(work, queued):
    """A serve of its own whose one runner is held by a run waiting on a module call
    (HOLD_MODULE), so every run admitted after it stays queued: queued runs over 16
    flows, admitted with detach by 16 clients. Returns (VmRSS, VmHWM) of the serve in
    KiB once they are all admitted, the VmRSS of the same serve idle before, and the
    pending runs the store holds then."""
    home = os.path.join(work, "mem-home")
    ck(home, "setup")
    fifo = os.path.join(work, "hold.fifo")
    os.mkfifo(fifo, 0o600)
    script = os.path.join(work, "hold_module.py")
    with open(script, "w") as f:
        f.write(HOLD_MODULE)
    with open(os.path.join(home, "modules.json"), "w") as f:
        json.dump({"modules": {"hold": {"program": sys.executable, "args": [script, fifo],
                                        "timeout_ms": 600000,
                                        "ops": {"wait": {"kind": "query"}}}}}, f)
    os.chmod(os.path.join(home, "modules.json"), 0o600)
    add_flow(home, work, "hold", "await ops.call('hold', 'wait', {});\nreturn 1;\n",
             ops=[{"module": "hold", "op": "wait"}])
    flows = [f"q{i}" for i in range(16)]
    for fid in flows:
        add_flow(home, work, fid, "return 1;\n")
    per_flow = (queued + len(flows) - 1) // len(flows)
    p = start_serve(home, "--max-runs", "1", "--backlog", str(per_flow),
                    "--rate-limit", str(RATE_LIMIT_MAX), "--grace-seconds", "0")
    try:
        idle = status_kib(p.pid, "VmRSS")
        request(home, "run", {"flow": "hold", "trigger": "{}", "detach": True})
        # The hold run has the runner once its module program is waiting on the FIFO.
        serve_log_line(p, "event=run_started")
        counts = [per_flow] * len(flows)
        counts[-1] -= per_flow * len(flows) - queued

        def admit(fid, n):
            for _ in range(n):
                request(home, "run", {"flow": fid, "trigger": "{}", "detach": True})

        threads = [threading.Thread(target=admit, args=(fid, n)) for fid, n in zip(flows, counts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rss, hwm = status_kib(p.pid, "VmRSS"), status_kib(p.pid, "VmHWM")
        db = sqlite3.connect(f"file:{os.path.join(home, 'basal.db')}?mode=ro", uri=True)
        pending = db.execute("SELECT count(*) FROM runs WHERE state = 'pending'").fetchone()[0]
        db.close()
        # Let the held call return (ENXIO: it is not waiting, nothing to release).
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    finally:
        p.terminate()
        p.wait()
    return rss, hwm, idle, pending


def floor(work, n):
    script = os.path.join(work, "trivial.js")
    with open(script, "w") as f:
        f.write("return 1;\n")
    start = time.monotonic()
    procs = [subprocess.Popen([CK, "exec", script, "--repeat", str(n)], stdout=subprocess.DEVNULL)
             for _ in range(2)]
    for p in procs:
        p.wait()
    return 2 * n / (time.monotonic() - start)


def main():
    scale = 1.0
    if len(sys.argv) == 3 and sys.argv[1] == "--scale":
        scale = float(sys.argv[2])
    runs = max(5, int(100 * scale))
    kv_calls = 50
    work = tempfile.mkdtemp(prefix="basal-serve-bench.")
    try:
        home = os.path.join(work, "home")
        ck(home, "setup")
        for i in range(16):
            add_flow(home, work, f"t{i}", "return 1;\n")
            add_flow(home, work, f"k{i}",
                     f"for (let i = 0; i < {kv_calls}; i++) await kv.set('k' + i, i);\nreturn 1;\n")
        # 16 runners, so that 16 flows can be busy at once; no rate limit to meet (the
        # default 60 admissions per flow per minute is below what a run of the bench
        # admits).
        p = start_serve(home, "--max-runs", "16", "--rate-limit", str(RATE_LIMIT_MAX))
        try:
            # Each flow's first run binds a worker of its own (a start of a few ms, and
            # the pool holds 16): the rates are those of flows already running, so each
            # phase's flows run once first.
            through_serve(home, [f"t{i}" for i in range(16)], 1)
            lat = []
            rates = {k: through_serve(home, [f"t{i}" for i in range(k)], max(4, runs // k),
                                      lat if k == 16 else None)
                     for k in (1, 4, 16)}
            piped, piped_ended = pipelined_admissions(home, [f"t{i}" for i in range(16)], runs)
            kv_runs = max(2, int(8 * scale))
            through_serve(home, [f"k{i}" for i in range(16)], 1)
            seq = through_serve(home, ["k0"], kv_runs) * kv_calls
            par = through_serve(home, [f"k{i}" for i in range(16)], kv_runs) * kv_calls
        finally:
            p.terminate()
            p.wait()
        fl = floor(work, max(200, int(2000 * scale)))
        # The goal's 10,000 queued runs; fewer for a short run (--scale under 1).
        queued = max(1000, int(10000 * min(scale, 1.0)))
        rss, hwm, idle, pending = queued_memory(work, queued)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| what | rate | against |")
    print("|---|---|---|")
    for k in (1, 4, 16):
        print(f"| trivial runs through serve, {k} flow{'s' if k > 1 else ''} busy | {rates[k]:.0f}/s "
              f"| {rates[k] / fl:.3f}x the in-process floor ({fl:.0f} activations/s, exec on 2 CPUs) |")
    lat.sort()
    p50 = lat[len(lat) // 2] * 1000
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
    print(f"| admission latency, 16 clients (request sent -> run durable and acknowledged; "
          f"{len(lat)} admissions) | p50 {p50:.2f} ms, p99 {p99:.2f} ms | goal p50 <= 0.5 ms, "
          f"p99 <= 2 ms |")
    print(f"| trivial runs, 16 flows, one client pipelining 16 requests on one connection "
          f"| {piped_ended:.0f}/s ended ({piped:.0f}/s admitted) | {piped_ended / fl:.3f}x the "
          f"floor; {piped_ended / rates[16]:.2f}x 16 clients one request at a time |")
    print(f"| durable kv.set, 1 flow (sequential) | {seq:.0f}/s | 1x |")
    print(f"| durable kv.set, 16 flows busy | {par:.0f}/s | {par / seq:.2f}x the sequential rate (goal 4x) |")
    held = "" if pending == queued else f"; only {pending} were pending: the held run did not hold"
    print(f"| one serve's memory with {queued:,} queued runs (16 flows, admitted by 16 clients) "
          f"| VmRSS {rss / 1024:.1f} MiB, VmHWM {hwm / 1024:.1f} MiB | {hwm / 1024 / 64:.2f}x the "
          f"goal of < 64 MiB (peak); the same serve idle {idle / 1024:.1f} MiB{held} |")


if __name__ == "__main__":
    main()
