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
    own, as a client makes) to its reply, which comes once the run is durable.
A measurement, not a test: the exit status says only whether it ran.
"""
import json
import os
import shutil
import socket
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


def request(home, cmd, args):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(os.path.join(home, "ops.sock"))
    s.sendall((json.dumps({"cmd": cmd, "args": args}) + "\n").encode())
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    reply = json.loads(data)
    if not reply.get("ok"):
        raise RuntimeError(f"{cmd}: {reply.get('error')}")
    return reply.get("data")


def add_flow(home, work, fid, script):
    d = os.path.join(work, "flow-" + fid)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "flow.js"), "w") as f:
        f.write(script)
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump({"format": 1, "id": fid, "version": 1, "purpose": "bench",
                   "trigger": {"manual": True}}, f)
    out = json.loads(ck(home, "flow", "install", d, json_out=True))
    ck(home, "flow", "approve", fid, "--version", "1", "--code-hash", out["code_hash"])


def start_serve(home, *extra):
    p = subprocess.Popen([CK, "--home", home, "serve"] + list(extra), stderr=subprocess.PIPE,
                         text=True)
    for line in p.stderr:
        if "event=ready" in line:
            break
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    return p


def through_serve(home, flows, runs_per_flow, latencies=None):
    """Admits runs_per_flow runs of each flow, all but the last with detach; the last is
    a `run` that waits for its end, and a flow's runs start in admission order, so its
    reply means the flow's runs have all ended. Runs/s. The flows stay enabled and keep
    their workers (a drain would end them). With a list, appends each detached
    admission's latency (s): the request sent (its connection opened) to the reply
    read, which serve sends once the run is durable."""
    start = time.monotonic()

    def admit(fid):
        for i in range(runs_per_flow - 1):
            sent = time.monotonic()
            request(home, "run", {"flow": fid, "trigger": "{}", "detach": True})
            if latencies is not None:
                latencies.append(time.monotonic() - sent)
        request(home, "run", {"flow": fid, "trigger": "{}", "detach": False})

    threads = [threading.Thread(target=admit, args=(f,)) for f in flows]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(flows) * runs_per_flow / (time.monotonic() - start)


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
            kv_runs = max(2, int(8 * scale))
            through_serve(home, [f"k{i}" for i in range(16)], 1)
            seq = through_serve(home, ["k0"], kv_runs) * kv_calls
            par = through_serve(home, [f"k{i}" for i in range(16)], kv_runs) * kv_calls
        finally:
            p.terminate()
            p.wait()
        fl = floor(work, max(200, int(2000 * scale)))
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
    print(f"| durable kv.set, 1 flow (sequential) | {seq:.0f}/s | 1x |")
    print(f"| durable kv.set, 16 flows busy | {par:.0f}/s | {par / seq:.2f}x the sequential rate (goal 4x) |")


if __name__ == "__main__":
    main()
